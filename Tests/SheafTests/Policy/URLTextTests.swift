import XCTest
@testable import Sheaf

final class URLTextTests: XCTestCase {
    // MARK: settingQuery

    func testSettingQueryReplacesTheParameterInPlaceAndKeepsTheOthers() {
        XCTAssertEqual(URLText.settingQuery("https://h.example/p?a=1&page=3&b=2", "page", to: "4"),
                       "https://h.example/p?a=1&page=4&b=2")
    }

    func testSettingQueryReplacesTheFirstOccurrenceAndDropsRepeats() {
        XCTAssertEqual(URLText.settingQuery("https://h.example/p?page=1&x=y&page=2", "page", to: "9"),
                       "https://h.example/p?page=9&x=y")
    }

    func testSettingQueryAppendsAMissingParameter() {
        XCTAssertEqual(URLText.settingQuery("https://h.example/p?a=1", "page", to: "2"), "https://h.example/p?a=1&page=2")
        XCTAssertEqual(URLText.settingQuery("https://h.example/p", "page", to: "2"), "https://h.example/p?page=2")
    }

    func testSettingQueryKeepsTheOtherParametersEncodingAndTheFragment() {
        XCTAssertEqual(URLText.settingQuery("https://h.example/p?q=a%20b%26c&page=1&flag#top", "page", to: "2"),
                       "https://h.example/p?q=a%20b%26c&page=2&flag#top")
    }

    func testSettingQueryPercentEncodesTheNameAndValue() {
        XCTAssertEqual(URLText.settingQuery("https://h.example/p", "page[number]", to: "a b&c=d/é"),
                       "https://h.example/p?page%5Bnumber%5D=a%20b%26c%3Dd%2F%C3%A9")
    }

    func testSettingQueryMatchesAParameterWhoseNameNeedsEncoding() {
        XCTAssertEqual(URLText.settingQuery("https://h.example/p?page%5Bnumber%5D=1&size=5", "page[number]", to: "2"),
                       "https://h.example/p?page%5Bnumber%5D=2&size=5")
    }

    // MARK: appendingQuery, queryValue

    func testAppendingQueryAddsParametersInOrderAfterTheExistingOnes() {
        XCTAssertEqual(URLText.appendingQuery("https://h.example/p?sort=name", [("page", "1"), ("q", "a b")]),
                       "https://h.example/p?sort=name&page=1&q=a%20b")
        XCTAssertEqual(URLText.appendingQuery("https://h.example/p", []), "https://h.example/p")
    }

    func testQueryValueDecodesTheFirstValue() {
        XCTAssertEqual(URLText.queryValue("https://h.example/p?page=2&q=a%20b&page=3", "page"), "2")
        XCTAssertEqual(URLText.queryValue("https://h.example/p?page=2&q=a%20b", "q"), "a b")
        XCTAssertNil(URLText.queryValue("https://h.example/p?pages=2", "page"))
    }

    func testEncodeQueryComponentLeavesOnlyUnreservedCharacters() {
        XCTAssertEqual(URLText.encodeQueryComponent("AZaz09-._~ +&=/?#%é"), "AZaz09-._~%20%2B%26%3D%2F%3F%23%25%C3%A9")
    }

    // MARK: resolve

    func testResolveFollowsRFC3986() {
        let base = "http://a.example/b/c/d;p?q"
        let cases = [
            ("g", "http://a.example/b/c/g"),
            ("./g", "http://a.example/b/c/g"),
            ("/g", "http://a.example/g"),
            ("//g.example/x", "http://g.example/x"),
            ("?y", "http://a.example/b/c/d;p?y"),
            ("g?y", "http://a.example/b/c/g?y"),
            ("../g", "http://a.example/b/g"),
            ("../../g", "http://a.example/g"),
            ("https://other.example/z?page=2", "https://other.example/z?page=2"),
        ]
        for (reference, expected) in cases {
            XCTAssertEqual(URLText.resolve(reference, against: base), expected, reference)
        }
    }

    func testResolveRefusesAnythingButAbsoluteHTTPURLs() {
        for reference in ["ftp://a.example/x", "mailto:someone@example.com", "file:///etc/passwd", "javascript:alert(1)",
                          "http://", "data:text/plain,hi"] {
            XCTAssertNil(URLText.resolve(reference, against: "https://a.example/"), reference)
        }
    }

    // MARK: The plain-URL paths agree with the parsers

    /// URLs of every shape the plain paths must take or leave to the parsers.
    static let urlCorpus = [
        "http://h.example/p", "https://h.example/p?a=1&page=3&b=2", "https://h.example/p?page=1&x=y&page=2",
        "https://H.Example:8443/a/b;c?d=e=f&flag&g=", "http://127.0.0.1:8080/anchor?n=500000&cap=1000&per_page=1000&page=7",
        "http://h.example", "http://h.example?x=1", "http://h.example/?", "http://h.example/p?&a=1", "http://h.example/p?a=1&&b",
        "http://h.example/a/../b?page=2", "http://h.example/./a", "http://h.example/a/..", "http://h.example/a/.b/..c",
        "https://h.example/p?q=a%20b&page=1", "https://h.example/p?page=1#top", "https://h.example/p?page[number]=1",
        "https://h.example/p?u=https://x.example/y?z=1&page=2", "http://user@h.example/p", "http://h.example:/p",
        "http://:80/p", "http:/h.example/p", "HTTP://h.example/p", "http://h_x.example/p", "https://h.example/ü?a=1",
        "https://h.example/p?a=b c", "https://h.example/p?a=(1)*!$'+,;:@~", "http://h.example:8080:90/p",
    ]

    func testSettingAQueryParameterWithoutParsingAgreesWithURLComponents() {
        var plain = 0
        for url in Self.urlCorpus {
            for (name, value) in [("page", "4"), ("a", "x y"), ("flag", "1"), ("page[number]", "2"), ("a:b", "é"), ("g", "")] {
                let parsed = URLText.settingQueryByParsing(url, name, to: value)
                guard let quick = URLText.settingPlainQuery(url, name, to: value) else { continue }
                plain += 1
                XCTAssertEqual(quick, parsed, "\(url) \(name)=\(value)")
            }
        }
        // The common shapes take the plain path (it is what a page's URL is made by).
        XCTAssertGreaterThan(plain, 60)
        XCTAssertNotNil(URLText.settingPlainQuery("http://127.0.0.1:8080/anchor?n=5&per_page=10", "page", to: "2"))
        XCTAssertNil(URLText.settingPlainQuery("https://h.example/p?q=a%20b", "page", to: "2"))
    }

    func testResolvingAPlainAbsoluteLinkWithoutParsingAgreesWithURL() {
        var plain = 0
        for reference in Self.urlCorpus {
            for base in ["https://a.example/b/c", "http://a.example:8080/x?y=1"] {
                guard URLText.plainHTTP(reference) != nil else { continue }
                plain += 1
                XCTAssertEqual(URLText.resolve(reference, against: base), URLText.resolveByParsing(reference, against: base), reference)
            }
        }
        XCTAssertGreaterThan(plain, 20)
    }

    // MARK: Origin

    func testOriginsWithTheSameSchemeHostAndPortAreEqual() {
        XCTAssertEqual(Origin("https://api.example.com/v1?x=1"), Origin("https://api.example.com"))
        XCTAssertEqual(Origin("https://API.Example.com/"), Origin("https://api.example.com/"))
        XCTAssertEqual(Origin("HTTPS://api.example.com/"), Origin("https://api.example.com/"))
        XCTAssertEqual(Origin("https://user:pw@api.example.com/"), Origin("https://api.example.com/"))
    }

    func testOriginsFillInTheDefaultPorts() {
        XCTAssertEqual(Origin("https://api.example.com:443/x"), Origin("https://api.example.com/y"))
        XCTAssertEqual(Origin("http://api.example.com:80/x"), Origin("http://api.example.com/y"))
        XCTAssertEqual(Origin("https://api.example.com")?.port, 443)
        XCTAssertEqual(Origin("http://api.example.com")?.port, 80)
    }

    func testOriginsDifferBySchemeHostOrPort() {
        let origin = Origin("https://api.example.com")
        XCTAssertNotEqual(origin, Origin("http://api.example.com"))
        XCTAssertNotEqual(origin, Origin("https://api.example.com:8443"))
        XCTAssertNotEqual(origin, Origin("https://example.com"))
        XCTAssertNotEqual(origin, Origin("https://api.example.com.evil.example"))
        XCTAssertNotEqual(Origin("http://api.example.com:443"), Origin("https://api.example.com"))
    }

    func testOnlyAbsoluteHTTPURLsHaveAnOrigin() {
        for text in ["ftp://api.example.com", "/relative", "api.example.com", "mailto:a@example.com", "https://", ""] {
            XCTAssertNil(Origin(text), text)
        }
    }

    func testOriginDescribesItselfWithTheExplicitPort() {
        XCTAssertEqual(Origin("https://api.example.com/x")?.description, "https://api.example.com:443")
    }

    func testAPortThatOverflowsOrIsOutOfRangeHasNoOrigin() {
        XCTAssertNil(Origin("http://api.example.com:18446744073709551696/"), "2^64+80 is not port 80")
        XCTAssertNil(Origin("http://api.example.com:99999/"))
        XCTAssertNil(Origin("http://api.example.com:8a/"))
        XCTAssertEqual(Origin("http://api.example.com:/x"), Origin("http://api.example.com:80/"))
        XCTAssertEqual(Origin("http://u@api.example.com:8080/")?.port, 8080)
        XCTAssertEqual(Origin("http://[::1]:8080/")?.port, 8080)
        XCTAssertEqual(Origin("https://[::1]/")?.port, 443)
    }

    func testABaseURLWithAPasswordIsRefusedWithoutRepeatingIt() {
        XCTAssertThrowsError(try SheafClient.validate(baseURL: "https://user:hunter2@api.example.com/")) { error in
            XCTAssertEqual((error as? SheafError)?.code, .invalidArgument)
            XCTAssertFalse((error as? SheafError)?.message.contains("hunter2") ?? true)
        }
        XCTAssertThrowsError(try SheafClient.validate(baseURL: "http://api.example.com:18446744073709551696/"))
    }

    func testBracketedParameterNamesAreMatchedWhetherEscapedOrNot() {
        XCTAssertEqual(URLText.settingQuery("https://a.example/x?page%5Bnumber%5D=2&q=1", "page[number]", to: "3"),
                       "https://a.example/x?page%5Bnumber%5D=3&q=1")
        XCTAssertEqual(URLText.settingQuery("https://a.example/x?page[number]=2", "page[number]", to: "3"),
                       "https://a.example/x?page%5Bnumber%5D=3")
        XCTAssertEqual(URLText.percentDecoded("a%5Bb%5d%zz%"), "a[b]%zz%")
    }

    func testALinkMixingEscapedAndRawBracketsKeepsItsParameterNames() {
        // The escaped "%5B" became "%255B" when the raw "[" made URL(string:) escape everything.
        let link = "https://a.example/x?n=1&page%5Bsize%5D=40&page[after]=NDA"
        let resolved = URLText.resolve(link, against: "https://a.example/x?n=1")
        XCTAssertEqual(resolved, "https://a.example/x?n=1&page%5Bsize%5D=40&page%5Bafter%5D=NDA")
        XCTAssertEqual(URLText.queryValue(resolved!, "page[size]"), "40")
        XCTAssertEqual(URLText.resolve("/y?q=a b|c", against: "http://[::1]:8080/x"), "http://[::1]:8080/y?q=a%20b%7Cc")
        XCTAssertEqual(URLText.escapingInvalid("https://a.example/plain?x=1"), "https://a.example/plain?x=1")
    }

    func testAPercentSignThatStartsNoEscapeIsEscapedAloneAndTheEscapesAroundItKept() {
        // Found by the parsers fuzzer (request mode): a stray "%" made URL(string:) escape the
        // whole URL, so "%3A" in a segment after it went out as "%253A", another resource.
        XCTAssertEqual(URLText.resolve("100%/a%3Ab%2F?q=5%&r=%zz&s=%4", against: "https://a.example/x/"),
                       "https://a.example/x/100%25/a%3Ab%2F?q=5%25&r=%25zz&s=%254")
        XCTAssertEqual(URLText.escapingInvalid("https://a.example/%"), "https://a.example/%25")
        XCTAssertEqual(URLText.escapingInvalid("https://a.example/%41%e9"), "https://a.example/%41%e9")
        XCTAssertEqual(URLText.queryValue(URLText.resolve("?q=5%", against: "https://a.example/x")!, "q"), "5%")
    }

    func testOnlyTheSchemesSeparatorStartsAnAuthority() {
        // Found by the parsers fuzzer (corpus/parsers/request-crash-url-in-path-double-escapes-segment):
        // a "://" inside a relative reference was taken for the scheme's, what came before it
        // was left as written, and its space made URL(string:) escape every escape again.
        XCTAssertEqual(URLText.resolve("search?q=a b&u=https://x.example/%7E", against: "https://a.example/"),
                       "https://a.example/search?q=a%20b&u=https://x.example/%7E")
        XCTAssertEqual(URLText.escapingInvalid("a\u{1}/://%00"), "a%01/://%00")
        XCTAssertEqual(URLText.escapingInvalid("HTTPS+x.1://h:1/a b"), "HTTPS+x.1://h:1/a%20b")
        XCTAssertEqual(URLText.escapingInvalid("1x://h/a b"), "1x://h/a%20b")
    }

    // MARK: escapingInvalid(part:), encodePathValue

    func testEscapingAPartLooksForNoAuthority() {
        XCTAssertEqual(URLText.escapingInvalid(part: "http://h x/a b%41%"), "http://h%20x/a%20b%41%25")
        XCTAssertEqual(URLText.escapingInvalid(part: "?q=a b&u=https://x/%7E"), "?q=a%20b&u=https://x/%7E")
    }

    func testAPathValueKeepsUnreservedCharactersAndSlashesOnly() {
        XCTAssertEqual(URLText.encodePathValue("owner/repo-1.x_y~z"), "owner/repo-1.x_y~z")
        XCTAssertEqual(URLText.encodePathValue("a b?c#d%e+f&g=h:i@j;k,l'm(n)o!p*q$r[s]"),
                       "a%20b%3Fc%23d%25e%2Bf%26g%3Dh%3Ai%40j%3Bk%2Cl%27m%28n%29o%21p%2Aq%24r%5Bs%5D")
        XCTAssertEqual(URLText.encodePathValue("é"), "%C3%A9")
    }
}
