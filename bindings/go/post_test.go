package sheaf_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"sheaf.dev/sheaf"
)

// A Notion database query: POST pages, the filter in the body and the cursor set in it page by
// page (the notion preset's body:/start_cursor); every item once, in order.
func TestANotionQueryIsPostedPageByPage(t *testing.T) {
	client := fresh(t)
	items, result, err := list(t, client, "/post/notion/query?n=250",
		sheaf.Preset("notion"),
		sheaf.Body("POST", "application/json", []byte(`{"filter":{"number":{"greater_than_or_equal_to":1}}}`)),
	).FetchAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 250 {
		t.Fatalf("%d items, want 250", len(items))
	}
	for i, raw := range items {
		var page struct {
			Object string `json:"object"`
			ID     string `json:"id"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%012d", i+1); page.Object != "page" || !strings.HasSuffix(page.ID, want) {
			t.Fatalf("item %d is %s, want an id ending %s", i, raw, want)
		}
	}
	if result.StopReason != sheaf.StopComplete || result.Items != 250 || result.ResumeToken != "" {
		t.Fatalf("result %+v", result)
	}
	if strings.Contains(result.Description, "greater_than_or_equal_to") {
		t.Fatalf("the body is in the description: %s", result.Description)
	}
	// Each page's body: the caller's filter, with the preset's page size and the cursor set in it.
	bodies := postedBodies(t)
	if len(bodies) != 3 {
		t.Fatalf("%d pages posted, want 3: %v", len(bodies), bodies)
	}
	for i, body := range bodies {
		var sent struct {
			Filter      map[string]any `json:"filter"`
			StartCursor *string        `json:"start_cursor"`
		}
		if err := json.Unmarshal([]byte(body), &sent); err != nil {
			t.Fatal(err)
		}
		if sent.Filter["number"] == nil || (i == 0) != (sent.StartCursor == nil) {
			t.Fatalf("page %d was posted %s", i, body)
		}
	}
}

// postedBodies are the bodies the server's /post/ endpoints received since the last reset.
func postedBodies(t *testing.T) []string {
	t.Helper()
	var log []struct {
		Path string `json:"path"`
		Body string `json:"body"`
	}
	if err := server.GetJSON("/_post/log", &log); err != nil {
		t.Fatal(err)
	}
	bodies := make([]string, len(log))
	for i, entry := range log {
		bodies[i] = entry.Body
	}
	return bodies
}

const issuesQuery = `query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { number title } }
  }
}`

type ghIssue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
}

func decodeIssues(t *testing.T, items []json.RawMessage) []ghIssue {
	t.Helper()
	issues := make([]ghIssue, len(items))
	for i, raw := range items {
		if err := json.Unmarshal(raw, &issues[i]); err != nil {
			t.Fatal(err)
		}
	}
	return issues
}

func checkNumbers(t *testing.T, issues []ghIssue, n int) {
	t.Helper()
	if len(issues) != n {
		t.Fatalf("%d issues, want %d", len(issues), n)
	}
	for i, it := range issues {
		if it.Number != i+1 || it.Title != fmt.Sprintf("Issue %d", i+1) {
			t.Fatalf("issue %d is %+v, want number %d", i, it, i+1)
		}
	}
}

// A GraphQL connection: the query and its variables posted, first and after set in the variables
// page by page, the nodes (or each edge's node) the items, totalCount the total.
func TestAGraphQLConnectionIsWalkedByItsCursor(t *testing.T) {
	variables := map[string]any{"owner": "octo", "name": "repo"}
	for _, tc := range []struct{ name, query string }{
		{"nodes", issuesQuery},
		{"edges", strings.Replace(issuesQuery, "nodes { number title }", "edges { cursor node { number title } }", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fresh(t)
			items, result, err := list(t, client, "/post/graphql?n=230",
				sheaf.GraphQL(tc.query, variables, "/data/repository/issues")).FetchAll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			checkNumbers(t, decodeIssues(t, items), 230)
			if result.StopReason != sheaf.StopComplete || result.ExpectedItems != 230 || result.Pages != 3 {
				t.Fatalf("result %+v", result)
			}
			if !strings.Contains(result.Description, `"graphql":{"connection":"/data/repository/issues"`) {
				t.Fatalf("description %s", result.Description)
			}
			// The caller's query and variables, with first and after set in the variables.
			for i, body := range postedBodies(t) {
				var sent struct {
					Query     string         `json:"query"`
					Variables map[string]any `json:"variables"`
				}
				if err := json.Unmarshal([]byte(body), &sent); err != nil {
					t.Fatal(err)
				}
				if sent.Query != tc.query || sent.Variables["owner"] != "octo" || sent.Variables["first"] != float64(100) ||
					(i == 0) != (sent.Variables["after"] == nil) {
					t.Fatalf("page %d was posted %s", i, body)
				}
			}
		})
	}
}

// GraphQL keeps what a Description says of the connection, given before it or after it.
func TestGraphQLKeepsTheDescriptionsConnectionParts(t *testing.T) {
	for _, order := range []string{"before", "after"} {
		t.Run(order, func(t *testing.T) {
			client := fresh(t)
			describe := sheaf.Description(`{"graphql": {"connection": "/data/other", "page_size": 40}}`)
			graphQL := sheaf.GraphQL(issuesQuery, map[string]any{"owner": "octo", "name": "repo"}, "/data/repository/issues")
			opts := []sheaf.ListOption{describe, graphQL}
			if order == "after" {
				opts = []sheaf.ListOption{graphQL, describe}
			}
			items, result, err := list(t, client, "/post/graphql?n=230", opts...).FetchAll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			checkNumbers(t, decodeIssues(t, items), 230)
			if result.Pages != 6 { // 40 a page
				t.Fatalf("result %+v", result)
			}
		})
	}
}

// An answer with errors and partial data fails the list with CodeAPI, naming the error; the
// pages before it are delivered.
func TestAGraphQLErrorFailsWithTheItemsBeforeIt(t *testing.T) {
	client := fresh(t)
	items, result, err := list(t, client, "/post/graphql?n=230&error_at=150",
		sheaf.GraphQL(issuesQuery, map[string]any{"owner": "octo", "name": "repo"}, "/data/repository/issues"),
	).FetchAll(context.Background())
	var serr *sheaf.Error
	if !errors.As(err, &serr) || serr.Code != sheaf.CodeAPI || !errors.Is(err, sheaf.CodeAPI) {
		t.Fatalf("err %v, want CodeAPI", err)
	}
	if serr.Code != 28 || !strings.Contains(serr.Message, "Something went wrong") {
		t.Fatalf("error %+v", serr)
	}
	checkNumbers(t, decodeIssues(t, items), 100)
	if result.StopReason != sheaf.StopFailed || result.ResumeToken == "" {
		t.Fatalf("result %+v", result)
	}

	// With "allow_partial", the page's data is read and the list goes on.
	items, _, err = list(t, client, "/post/graphql?n=230&error_at=150",
		sheaf.GraphQL(issuesQuery, map[string]any{"owner": "octo", "name": "repo"}, "/data/repository/issues"),
		sheaf.Description(`{"graphql": {"connection": "/data/repository/issues", "allow_partial": true}}`),
	).FetchAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkNumbers(t, decodeIssues(t, items), 230)
}

// What the library refuses of a method and a body is refused when the list is made or run.
func TestABodyTheLibraryRefuses(t *testing.T) {
	client := fresh(t)
	if _, err := client.List("/post/notion/query", sheaf.Body("HEAD", "", nil)); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("HEAD: %v", err)
	}
	if _, err := client.List("/post/graphql", sheaf.GraphQL("{ viewer { login } }", nil, "")); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("no connection: %v", err)
	}
	_, _, err := list(t, client, "/post/notion/query", sheaf.Preset("notion"), sheaf.Body("", "", []byte(`[1, 2]`))).
		FetchAll(context.Background())
	if !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("an array body: %v", err)
	}
}

const issuesWithCommentsQuery = `query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after) {
      totalCount pageInfo { hasNextPage endCursor }
      nodes { id number comments(first: 5) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } }
    }
  }
}`

const commentsQuery = `query($id: ID!, $first: Int!, $after: String) {
  node(id: $id) { ... on Issue { comments(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id } } } }
}`

type ghIssueWithComments struct {
	ID       string `json:"id"`
	Number   int    `json:"number"`
	Comments struct {
		TotalCount int `json:"totalCount"`
		PageInfo   struct {
			HasNextPage bool `json:"hasNextPage"`
		} `json:"pageInfo"`
		Nodes []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	} `json:"comments"`
}

// Each issue's comments, cut short at 5 by the list's query, are completed by the nested query:
// every issue arrives in order with all (number * 7) % 23 of its comments.
func TestNestedConnectionsAreCompleted(t *testing.T) {
	variables := map[string]any{"owner": "octo", "name": "repo"}
	for _, tc := range []struct {
		name   string
		nested sheaf.ListOption
		first  float64 // the nested query's page size
	}{
		{"Nested", sheaf.Nested("/comments", commentsQuery), 100},
		{"NestedConnections", sheaf.NestedConnections(sheaf.NestedConnection{
			Field: "/comments", Query: commentsQuery, Connection: "/data/node/comments", PageSize: 4}), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fresh(t)
			l := list(t, client, "/post/graphql?n=120",
				tc.nested, sheaf.GraphQL(issuesWithCommentsQuery, variables, "/data/repository/issues"))
			issues, err := sheaf.FetchAllInto[ghIssueWithComments](context.Background(), l)
			if err != nil {
				t.Fatal(err)
			}
			if len(issues) != 120 {
				t.Fatalf("%d issues, want 120", len(issues))
			}
			completed := 0
			for i, issue := range issues {
				count := (issue.Number * 7) % 23
				comments := issue.Comments
				if issue.Number != i+1 || issue.ID != fmt.Sprintf("I_kwDO%08d", i+1) || len(comments.Nodes) != count ||
					comments.TotalCount != count || comments.PageInfo.HasNextPage {
					t.Fatalf("issue %d is %+v, want number %d with %d comments", i, issue, i+1, count)
				}
				if count > 0 && comments.Nodes[count-1].ID != fmt.Sprintf("IC_%d_%d", issue.Number, count) {
					t.Fatalf("issue %d's last comment is %s", issue.Number, comments.Nodes[count-1].ID)
				}
				if count > 5 {
					completed++
				}
			}
			if result := l.Result(); result.StopReason != sheaf.StopComplete || result.Items != 120 {
				t.Fatalf("result %+v", result)
			}
			if !strings.Contains(l.Result().Description, `"nested":[{"field":"/comments"`) {
				t.Fatalf("description %s", l.Result().Description)
			}
			// One nested query for each issue with more than 5 comments, from its fifth on.
			nested := 0
			for _, body := range postedBodies(t) {
				var sent struct {
					Query     string         `json:"query"`
					Variables map[string]any `json:"variables"`
				}
				if err := json.Unmarshal([]byte(body), &sent); err != nil {
					t.Fatal(err)
				}
				if sent.Query != commentsQuery {
					continue
				}
				nested++
				if id, _ := sent.Variables["id"].(string); !strings.HasPrefix(id, "I_kwDO") || sent.Variables["first"] != tc.first {
					t.Fatalf("a nested query was posted %s", body)
				}
			}
			if tc.first == 100 && nested != completed {
				t.Fatalf("%d nested queries for %d issues with more than 5 comments", nested, completed)
			}
			if tc.first == 4 && nested <= completed {
				t.Fatalf("%d nested queries of 4 for %d issues with more than 5 comments", nested, completed)
			}
		})
	}
}

// A nested query answered with an error fails the list with CodeAPI, naming the node. Issue 50
// has 5 comments: the list's comments(first: 5) has them all, and no nested query is sent for it;
// comments(first: 2) leaves 3 to the nested query, which fails.
func TestANestedConnectionThatFailsFailsTheList(t *testing.T) {
	client := fresh(t)
	variables := map[string]any{"owner": "octo", "name": "repo"}
	items, _, err := list(t, client, "/post/graphql?n=120&nested_fail=50",
		sheaf.GraphQL(issuesWithCommentsQuery, variables, "/data/repository/issues"),
		sheaf.Nested("/comments", commentsQuery),
	).FetchAll(context.Background())
	if err != nil || len(items) != 120 {
		t.Fatalf("comments(first: 5): %d items, err %v", len(items), err)
	}

	firstTwo := strings.Replace(issuesWithCommentsQuery, "comments(first: 5)", "comments(first: 2)", 1)
	_, result, err := list(t, client, "/post/graphql?n=120&nested_fail=50",
		sheaf.GraphQL(firstTwo, variables, "/data/repository/issues"),
		sheaf.Nested("/comments", commentsQuery),
	).FetchAll(context.Background())
	var serr *sheaf.Error
	if !errors.As(err, &serr) || serr.Code != sheaf.CodeAPI {
		t.Fatalf("err %v, want CodeAPI", err)
	}
	if !strings.Contains(serr.Message, `of the node with id "I_kwDO00000050"`) ||
		!strings.Contains(serr.Message, "Resource not accessible by integration") {
		t.Fatalf("error %+v", serr)
	}
	if result.StopReason != sheaf.StopFailed {
		t.Fatalf("result %+v", result)
	}
}

// Nested is refused without a GraphQL connection, and without its field or query.
func TestNestedNeedsAGraphQLList(t *testing.T) {
	client := fresh(t)
	if _, err := client.List("/post/graphql", sheaf.Nested("/comments", commentsQuery)); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("no connection: %v", err)
	}
	if _, err := client.List("/post/graphql", sheaf.Nested("", commentsQuery)); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("no field: %v", err)
	}
	// A Description's "graphql" connection is one; its own nested entry of the same field is replaced.
	l := list(t, client, "/post/graphql",
		sheaf.Description(`{"graphql": {"connection": "/data/repository/issues", "nested": [{"field": "/comments", "query": "old"}, {"field": "/labels", "query": "labels"}]}}`),
		sheaf.Nested("/comments", commentsQuery))
	description, err := l.Description()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(description, `"query":"old"`) || !strings.Contains(description, `"field":"/labels"`) ||
		strings.Count(description, `"field":"/comments"`) != 1 {
		t.Fatalf("description %s", description)
	}
}
