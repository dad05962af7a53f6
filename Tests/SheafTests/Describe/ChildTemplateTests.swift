import XCTest
@testable import Sheaf

private let parent = "https://api.github.com/orgs/acme/repos?per_page=100&page=3"

/// The child URL `template` makes from the parent item `item` (JSON text) of a page at `parentURL`.
private func child(_ template: String, _ item: String, parentURL: String = parent,
                   file: StaticString = #filePath, line: UInt = #line) -> String? {
    do {
        switch try ChildTemplate(template).expand(item: Array(item.utf8), parentURL: parentURL) {
        case .success(let url): return url.url
        case .failure(let failure):
            XCTFail("\(template) with \(item): \(failure)", file: file, line: line)
            return nil
        }
    } catch {
        XCTFail("\(template): \(error)", file: file, line: line)
        return nil
    }
}

/// Why `template` makes no child from `item`.
private func failure(_ template: String, _ item: String, parentURL: String = parent,
                     file: StaticString = #filePath, line: UInt = #line) -> ChildTemplate.Failure? {
    do {
        switch try ChildTemplate(template).expand(item: Array(item.utf8), parentURL: parentURL) {
        case .success(let url):
            XCTFail("\(template) with \(item) made \(url)", file: file, line: line)
            return nil
        case .failure(let failure): return failure
        }
    } catch {
        XCTFail("\(template): \(error)", file: file, line: line)
        return nil
    }
}

/// The message of the error parsing `template` gives.
private func refusal(_ template: String, file: StaticString = #filePath, line: UInt = #line) -> String {
    do {
        let parsed = try ChildTemplate(template)
        XCTFail("\(template) parsed as \(parsed.pointers)", file: file, line: line)
        return ""
    } catch {
        XCTAssertEqual(error.code, .invalidArgument, template, file: file, line: line)
        XCTAssertNotNil(error.hint, template, file: file, line: line)
        return error.message
    }
}

final class ChildTemplateTests: XCTestCase {
    // MARK: Values in a path

    func testAGitHubFullNameFillsTwoSegmentsOnTheParentsOrigin() {
        XCTAssertEqual(child("/repos/{/full_name}/issues", #"{"id":1,"full_name":"acme/widgets"}"#),
                       "https://api.github.com/repos/acme/widgets/issues")
    }

    func testValuesCanComeFromNestedAndEscapedPointers() {
        let item = #"{"owner":{"login":"acme"},"name":"widgets","a/b":"x","m~n":"y","tags":["t0","t1"]}"#
        XCTAssertEqual(child("/repos/{/owner/login}/{/name}/issues", item), "https://api.github.com/repos/acme/widgets/issues")
        XCTAssertEqual(child("/x/{/a~1b}/{/m~0n}/{/tags/1}", item), "https://api.github.com/x/x/y/t1")
    }

    func testNumbersKeepTheirJSONTextAndBooleansAreTrueOrFalse() {
        let item = #"{"id":42,"big":12345678901234567890,"ratio":-1.5e3,"open":true,"locked":false}"#
        XCTAssertEqual(child("/items/{/id}/{/big}/{/ratio}/{/open}/{/locked}", item),
                       "https://api.github.com/items/42/12345678901234567890/-1.5e3/true/false")
    }

    func testDotSegmentsFromAValueAreEncodedSoTheyCannotClimbThePath() {
        XCTAssertEqual(child("/repos/{/n}/issues", #"{"n":".."}"#), "https://api.github.com/repos/%2E%2E/issues")
        XCTAssertEqual(child("/repos/{/n}/issues", #"{"n":"."}"#), "https://api.github.com/repos/%2E/issues")
        XCTAssertEqual(child("/repos/{/n}/issues", #"{"n":"a/../../admin"}"#), "https://api.github.com/repos/a/%2E%2E/%2E%2E/admin/issues")
        // Two values that make ".." together, and dots that make no dot segment (left as they are).
        XCTAssertEqual(child("/x/{/a}{/b}/y", #"{"a":".","b":"."}"#), "https://api.github.com/x/%2E%2E/y")
        XCTAssertEqual(child("/x/{/a}", #"{"a":"v1.2..3"}"#), "https://api.github.com/x/v1.2..3")
        XCTAssertEqual(child("/x/v{/a}", #"{"a":"."}"#), "https://api.github.com/x/v.")
    }

    func testQuestionMarksHashesSpacesAndPercentsInAValueAreEncoded() {
        XCTAssertEqual(child("/repos/{/n}/issues", #"{"n":"a?b#c d%e"}"#), "https://api.github.com/repos/a%3Fb%23c%20d%25e/issues")
        XCTAssertEqual(child("/x/{/n}", #"{"n":"%2F"}"#), "https://api.github.com/x/%252F") // a value is never taken for an escape
        XCTAssertEqual(child("/x/{/n}", #"{"n":"a+b&c=d;e:f@g"}"#), "https://api.github.com/x/a%2Bb%26c%3Dd%3Be%3Af%40g")
        XCTAssertEqual(child("/x/{/n}", #"{"n":"a-b.c_d~e"}"#), "https://api.github.com/x/a-b.c_d~e")
    }

    func testNonASCIIIsPercentEncodedAsUTF8() {
        XCTAssertEqual(child("/users/{/login}", #"{"login":"zoë/日本"}"#), "https://api.github.com/users/zo%C3%AB/%E6%97%A5%E6%9C%AC")
        XCTAssertEqual(child("/users/{/login}", #"{"login":"\u00e9\ud83d\ude00"}"#), "https://api.github.com/users/%C3%A9%F0%9F%98%80")
    }

    // MARK: Values in a query

    func testAValueInTheQueryIsEncodedForAQueryValue() {
        let item = #"{"full_name":"acme/widgets","q":"a b&c=d+e/f?g#h"}"#
        XCTAssertEqual(child("/search/issues?q={/q}&repo={/full_name}&per_page=100", item),
                       "https://api.github.com/search/issues?q=a%20b%26c%3Dd%2Be%2Ff%3Fg%23h&repo=acme%2Fwidgets&per_page=100")
        // Dots in a query value are no dot segment.
        XCTAssertEqual(child("/x/{/full_name}?v={/q}", #"{"full_name":"a/b","q":".."}"#), "https://api.github.com/x/a/b?v=..")
        // An empty value is a value in a query.
        XCTAssertEqual(child("/x/{/full_name}?v={/q}", #"{"full_name":"a/b","q":""}"#), "https://api.github.com/x/a/b?v=")
    }

    func testTheTemplatesOwnTextIsKeptItsEscapesIncluded() {
        XCTAssertEqual(child("/repos/{/full_name}/issues?state=all&labels=bug%2Cui&q=a b", #"{"full_name":"a/b"}"#),
                       "https://api.github.com/repos/a/b/issues?state=all&labels=bug%2Cui&q=a%20b")
    }

    // MARK: Where the child is

    func testAPathIsJoinedToTheParentsSchemeHostAndPortOnly() {
        XCTAssertEqual(child("/r/{/id}", #"{"id":7}"#, parentURL: "http://127.0.0.1:8123/orgs/o/repos?page=2"), "http://127.0.0.1:8123/r/7")
        XCTAssertEqual(child("/r/{/id}", #"{"id":7}"#, parentURL: "HTTPS://API.Example.COM:443/v1/things"), "https://api.example.com/r/7")
        XCTAssertEqual(child("/r/{/id}", #"{"id":7}"#, parentURL: "https://user:secret@h.example:8443/v1"), "https://h.example:8443/r/7")
        XCTAssertEqual(child("/r/{/id}", #"{"id":7}"#, parentURL: "http://[::1]:9000/list"), "http://[::1]:9000/r/7")
    }

    func testAnAbsoluteTemplateKeepsItsOwnOrigin() {
        XCTAssertEqual(child("https://uploads.example.com/repos/{/full_name}/assets", #"{"full_name":"a/b"}"#),
                       "https://uploads.example.com/repos/a/b/assets")
        XCTAssertEqual(child("HTTP://H.example:8080/x/{/id}?v={/id}", #"{"id":3}"#), "http://h.example:8080/x/3?v=3")
        XCTAssertFalse(try ChildTemplate("https://h.example/x/{/id}").isRelative)
        XCTAssertTrue(try ChildTemplate("/x/{/id}").isRelative)
    }

    func testAParentURLWithoutAnOriginJoinsNoPath() {
        XCTAssertEqual(failure("/x/{/id}", #"{"id":1}"#, parentURL: "/relative/only")?.found, .parentWithoutOrigin)
        XCTAssertEqual(failure("/x/{/id}", #"{"id":1}"#, parentURL: "ftp://h.example/x")?.found, .parentWithoutOrigin)
    }

    // MARK: Values it cannot use

    func testAMissingNullObjectOrArrayValueIsAFailureNamingThePointerAndWhatWasFound() throws {
        let template = "/repos/{/owner/login}/{/name}/issues"
        let cases: [(String, ChildTemplate.Failure.Found, String, String)] = [
            (#"{"name":"w"}"#, .missing, "/owner/login", "no value at \"/owner/login\""),
            (#"{"owner":"acme","name":"w"}"#, .missing, "/owner/login", "no value"),       // a string has no members
            (#"{"owner":{"login":"acme"}}"#, .missing, "/name", "no value at \"/name\""),
            (#"{"owner":{"login":null},"name":"w"}"#, .null, "/owner/login", "null at \"/owner/login\""),
            (#"{"owner":{"login":{"x":1}},"name":"w"}"#, .object, "/owner/login", "an object at \"/owner/login\""),
            (#"{"owner":{"login":["a"]},"name":"w"}"#, .array, "/owner/login", "an array at \"/owner/login\""),
            (#"{"owner":{"login":""},"name":"w"}"#, .emptyString, "/owner/login", "an empty string"),
            (#"{"owner":{"login":"a\u0000b"},"name":"w"}"#, .nul, "/owner/login", "a NUL character"),
            (#"{"owner":{"login":"acme"},"name":"\u0000"}"#, .nul, "/name", "a NUL character"),
        ]
        for (item, found, pointer, words) in cases {
            let got = try XCTUnwrap(failure(template, item), item)
            XCTAssertEqual(got.found, found, item)
            XCTAssertEqual(got.pointer?.description, pointer, item)
            XCTAssertTrue(got.description.contains(words), "\(item): \(got.description)")
            // Failing the job on it: a bad page, at the parent page, naming the pointer.
            XCTAssertEqual(got.error.code, .badPage)
            XCTAssertEqual(got.error.url, parent)
            XCTAssertEqual(got.error.jsonPointer, pointer)
            XCTAssertTrue(got.error.message.hasPrefix(parent + ": "), got.error.message)
        }
    }

    func testAnItemThatIsNotOneJSONValueIsAFailure() {
        XCTAssertEqual(failure("/x/{/id}", #"{"id":1"#)?.found, .invalidItem)
        XCTAssertEqual(failure("/x/{/id}", #"{"id":1} {"id":2}"#)?.found, .invalidItem)
        XCTAssertEqual(failure("/x/{/id}", "")?.found, .invalidItem)
        XCTAssertEqual(child("/x/{/id}", " \n{\"id\":1}\n "), "https://api.github.com/x/1")
    }

    func testAnItemInsideAPageBodyIsReadInPlace() throws {
        let body = Array(#"{"items":[{"full_name":"a/b"},{"full_name":"c/d"}]}"#.utf8)
        let second = 30..<49
        XCTAssertEqual(String(decoding: body[second], as: UTF8.self), #"{"full_name":"c/d"}"#)
        let result = try ChildTemplate("/repos/{/full_name}").expand(item: second, of: body, parentURL: parent)
        XCTAssertEqual(try result.get().url, "https://api.github.com/repos/c/d")
    }

    // MARK: The same child

    func testParentItemsThatRepeatNameTheSameChildOnce() throws {
        let template = try ChildTemplate("/repos/{/full_name}/issues")
        let items = [#"{"id":1,"full_name":"a/b"}"#, #"{"id":2,"full_name":"c/d"}"#, #"{"full_name":"a/b","id":1}"#,
                     #"{"id":3,"full_name":"a\/b"}"#, #"{"id":4,"full_name":"a%2Fb"}"#]
        var children: [ChildURL] = []
        var seen: Set<ChildURL> = []
        for item in items {
            let url = try template.expand(item: Array(item.utf8), parentURL: parent).get()
            if seen.insert(url).inserted { children.append(url) }
        }
        // "a\/b" is the JSON spelling of "a/b"; "a%2Fb" is another name.
        XCTAssertEqual(children.map(\.url), ["https://api.github.com/repos/a/b/issues", "https://api.github.com/repos/c/d/issues",
                                             "https://api.github.com/repos/a%252Fb/issues"])
        // Parents on differently spelled origins name the same child.
        let one = try template.expand(item: Array(items[0].utf8), parentURL: "HTTPS://api.github.com:443/orgs/a/repos").get()
        let other = try template.expand(item: Array(items[0].utf8), parentURL: "https://api.github.com/orgs/a/repos?page=2").get()
        XCTAssertEqual(one, other)
    }

    // MARK: Parsing

    func testATemplateListsItsPointersInOrder() throws {
        let template = try ChildTemplate("/repos/{/owner/login}/{/a~1b}/issues?since={/since}")
        XCTAssertEqual(template.pointers, [JSONPointer("/owner/login")!, JSONPointer("/a~1b")!, JSONPointer("/since")!])
        XCTAssertEqual(template.pointers[1].tokens, ["a/b"])
        XCTAssertEqual(template.description, "/repos/{/owner/login}/{/a~1b}/issues?since={/since}")
    }

    func testUnbalancedBracesAreRefused() {
        XCTAssertTrue(refusal("/repos/{/full_name/issues").contains("never closed"))
        XCTAssertTrue(refusal("/repos/{/a{/b}}/issues").contains("inside a value"))
        XCTAssertTrue(refusal("/repos/{/a}}/issues").contains("closes no value"))
        XCTAssertTrue(refusal("/repos/}{/a}").contains("closes no value"))
    }

    func testEmptyAndInvalidPointersAreRefused() {
        XCTAssertTrue(refusal("/repos/{}/issues").contains("empty value"))
        XCTAssertTrue(refusal("/repos/{full_name}/issues").contains("not a JSON pointer"))
        XCTAssertTrue(refusal("/repos/{/a~2b}/issues").contains("not a JSON pointer"))
        XCTAssertTrue(refusal("/repos/{/a~}/issues").contains("~0 or ~1"))
    }

    func testATemplateIsAPathOrAnAbsoluteHTTPURL() {
        for template in ["repos/{/full_name}", "{/url}", "?q={/a}", "ftp://h.example/{/a}", "mailto:{/a}", "urn:x:{/a}"] {
            XCTAssertTrue(refusal(template).contains("neither a path") || refusal(template).contains("starts with a value"), template)
        }
        XCTAssertTrue(refusal("//evil.example/{/a}").contains("a host of its own"))
        XCTAssertTrue(refusal("https://{/host}/x").contains("value in its host"))
        XCTAssertTrue(refusal("https://h.example{/a}").contains("value in its host"))
        XCTAssertTrue(refusal("https://h.example?q={/a}").contains("no path"))
        XCTAssertTrue(refusal("https://h.example:99999/{/a}").contains("valid http(s) scheme, host and port"))
        XCTAssertTrue(refusal("https://u:p@h.example/{/a}").contains("no user information"))
    }

    func testATemplateWithoutAValueOrWithAFragmentIsRefused() {
        XCTAssertTrue(refusal("/repos/acme/widgets/issues").contains("no value"))
        XCTAssertTrue(refusal("/repos/{/full_name}/issues#top").contains("fragment"))
    }

    func testARefusalQuotesTheTemplate() {
        XCTAssertTrue(refusal("/x/{y}").hasPrefix("the child URL template \"/x/{y}\" "))
    }
}
