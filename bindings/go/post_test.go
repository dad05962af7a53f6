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
