import Sheaf
import SheafCurl

struct Repo: Decodable, Sendable {
    let id: Int
    let name: String
}

struct NewRepo: Encodable {
    let name: String
}

func quickStart(token: String) async throws {
    let client = try SheafClient(baseURL: "https://api.github.com", bearerToken: token, transport: CurlTransport())

    // Every item of a list, decoded; its paging detected from the first page.
    let repos = try await client.fetchAll(Repo.self, path: "/orgs/swiftlang/repos?per_page=100")
    print(repos.count)

    // The same list as growing snapshots; leaving the loop (or cancelling the task) cancels it.
    for try await snapshot in client.snapshots(Repo.self, path: "/orgs/swiftlang/repos") {
        print("\(snapshot.itemCount) of \(snapshot.expectedItems.map(String.init) ?? "?")", snapshot.items.map(\.name))
    }

    // A known API's shape pinned, with budgets; a budget's stop is a reason, a failure carries
    // the items before it.
    var issues = try Preset.named("github").applied(to: ListDescription(path: "/repos/swiftlang/swift/issues"))
    issues.maxPages = 5
    do {
        let firstPages = try await client.fetchAll(Repo.self, issues)
        print(firstPages.count, "items, stopped:", firstPages.stopReason) // .pageBudget when more pages followed
    } catch {
        print(error.code, error.httpStatus ?? 0, error.message, "items before it:", error.items.count)
    }

    // Single requests, with Codable bodies.
    let created = try await client.send(Repo.self, method: "POST", path: "/user/repos", body: NewRepo(name: "sheaf-demo"))
    let same = try await client.fetch(Repo.self, path: "/repositories/\(created.id)")
    print(same.name)

    // Load more: one page per call, a page ahead.
    let pager = try client.makePager(ListDescription(path: "/orgs/swiftlang/repos"), lookAhead: 1)
    while let page = try await pager.more(Repo.self) {
        print(page.map(\.name))
    }
}
