package sheaf

/*
#include <stdlib.h>
#include <sheaf.h>
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// StopReason says why a list ended (sheaf_stop_reason).
type StopReason int

const (
	StopNone          StopReason = C.SHEAF_STOP_NONE           // it has not ended
	StopComplete      StopReason = C.SHEAF_STOP_COMPLETE       // every page arrived and agrees with the total
	StopItemLimit     StopReason = C.SHEAF_STOP_ITEM_LIMIT     // MaxItems was reached; ResumeToken goes on
	StopPageBudget    StopReason = C.SHEAF_STOP_PAGE_BUDGET    // PageBudget was reached; ResumeToken goes on
	StopRequestBudget StopReason = C.SHEAF_STOP_REQUEST_BUDGET // RequestBudget was reached; ResumeToken goes on
	StopFailed        StopReason = C.SHEAF_STOP_FAILED         // it failed, was stopped or cancelled
	StopBound         StopReason = C.SHEAF_STOP_BOUND          // the description's "until" bound was reached
	StopUnconfirmed   StopReason = C.SHEAF_STOP_UNCONFIRMED    // one full page, and nothing said it was the last
)

func (r StopReason) String() string {
	switch r {
	case StopNone:
		return "none"
	case StopComplete:
		return "complete"
	case StopItemLimit:
		return "item_limit"
	case StopPageBudget:
		return "page_budget"
	case StopRequestBudget:
		return "request_budget"
	case StopFailed:
		return "failed"
	case StopBound:
		return "bound"
	case StopUnconfirmed:
		return "unconfirmed"
	}
	return "unknown"
}

// Result is how a list's run ended.
type Result struct {
	StopReason    StopReason
	ResumeToken   string // goes on after the items delivered (List option Resume); "" when complete
	Items         int64  // items delivered to the caller, after de-duplication
	Pages         int64  // pages delivered
	ExpectedItems int64  // the server's total, or -1 when unknown
	Requests      int64  // requests sent, retries and redirects included
	Description   string // the description the run used, as JSON (detected parts resolved)
}

// List is one paginated list of a client: its description (ListOptions), then one run of it
// (FetchAll, FetchAllInto or Each). A List is used by one goroutine at a time; Cancel may be
// called from any goroutine. The run frees the C list when it ends; Close frees a list that never
// ran (and cancels one that runs): defer it.
type List struct {
	mu      sync.Mutex // guards c against Cancel racing the free
	c       *C.sheaf_list
	started bool
	result  Result

	// passOver is how many items the run passes over before it delivers any: those fn was
	// already given of the snapshot an earlier Each stopped inside (a token of eachTokenPrefix).
	passOver int64
	maxItems int64 // MaxItems' n: the library's item budget is n + passOver

	// connection is GraphQL's pointer to the connection in the answer, merged into the
	// description once every option has been applied ("" when the list is no GraphQL list).
	connection string
	// nested are the Nested and NestedConnections options' connections, merged into the
	// description's "graphql" "nested" with the connection.
	nested []NestedConnection
}

// ListOption describes a list in Client.List.
type ListOption func(*List) error

// List makes a list of the client at path (joined to the base URL; may carry a query), described
// by opts; undescribed, its paging is detected from its first page.
func (c *Client) List(path string, opts ...ListOption) (*List, error) {
	list := &List{}
	err := c.use(func(client *C.sheaf_client) error {
		return call(withCString(path, func(p *C.char) C.sheaf_result { return C.sheaf_list_new(&list.c, client, p) }))
	})
	if err != nil {
		return nil, err
	}
	for _, opt := range opts {
		if err := opt(list); err != nil {
			list.Close()
			return nil, err
		}
	}
	if list.connection != "" || len(list.nested) > 0 {
		// After every option, so that a Preset or Description given after GraphQL or Nested keeps them.
		if err := list.describeGraphQL(); err != nil {
			list.Close()
			return nil, err
		}
	}
	if list.passOver > 0 && list.maxItems > 0 {
		// The library counts the items passed over among those its item budget allows.
		if err := budget(C.SHEAF_BUDGET_ITEMS, list.maxItems+list.passOver)(list); err != nil {
			list.Close()
			return nil, err
		}
	}
	return list, nil
}

// Preset pins the paging and signals of a known API ("github", "stripe", ...; Presets lists them).
func Preset(name string) ListOption {
	return func(l *List) error {
		return call(withCString(name, func(n *C.char) C.sheaf_result { return C.sheaf_list_use_preset(l.c, n) }))
	}
}

// Description describes the list by its JSON form (include/sheaf/description.schema.json), e.g.
// {"paging": {"kind": "page_number", "param": "page"}, "signals": {"items": {"source": "body", "where": "/results"}}}.
func Description(json string) ListOption {
	return func(l *List) error {
		return call(withCString(json, func(j *C.char) C.sheaf_result { return C.sheaf_list_set_description(l.c, j) }))
	}
}

// Query adds a query parameter to every page request.
func Query(name, value string) ListOption {
	return func(l *List) error {
		return call(withCStrings(name, value, func(n, v *C.char) C.sheaf_result { return C.sheaf_list_add_query(l.c, n, v) }))
	}
}

// Header adds a header to every page request, replacing the client's of the same name.
func Header(name, value string) ListOption {
	return func(l *List) error {
		return call(withCStrings(name, value, func(n, v *C.char) C.sheaf_result { return C.sheaf_list_add_header(l.c, n, v) }))
	}
}

// Body asks for every page with method and body (sheaf_list_set_body): a list behind a POST, such
// as Notion's database query or Elasticsearch's _search. method "" is "POST"; contentType "" is
// "application/json". body is copied when the option is applied, so the caller may reuse it, and
// is never part of a message, a log record, a resume token or a description. Paging parameters
// named "body:" and a JSON pointer (the notion preset's "body:/start_cursor") are set inside the
// body page by page: the body must then be a JSON object (nil is {}), or the run fails with
// CodeInvalidArgument. A POST page that failed is sent again (retries, rate limits) only when the
// description says the endpoint only reads ("read_only": true, which the notion and elasticsearch
// presets set) or for a GraphQL query; otherwise the first transient failure fails the list.
// Body("GET", "", nil) undoes it.
func Body(method, contentType string, body []byte) ListOption {
	return func(l *List) error {
		if method == "" {
			method = "POST"
		}
		if hasNUL(method, contentType) {
			return nulError()
		}
		var kind *C.char // NULL: application/json
		if contentType != "" {
			kind = cString(contentType)
			defer C.free(unsafe.Pointer(kind))
		}
		return call(withCString(method, func(m *C.char) C.sheaf_result {
			var data unsafe.Pointer
			if len(body) > 0 {
				data = unsafe.Pointer(&body[0]) // copied by the call; holds no Go pointer
			}
			return C.sheaf_list_set_body(l.c, m, kind, data, C.size_t(len(body)))
		}))
	}
}

// GraphQL makes the list a GraphQL connection: every page is a POST of
// {"query": query, "variables": variables} (encoding/json; nil variables are {}), and the
// description gets {"graphql": {"connection": connection}}, connection being the JSON pointer to
// the connection in the answer ("/data/repository/issues"). The library then sets the page size
// in variables.first (100, or the description's "graphql" "page_size") and the cursor in
// variables.after, page by page: the query takes $first and $after (leave them out of variables),
// and selects pageInfo { hasNextPage endCursor } and nodes (or edges { node }), and totalCount
// for a total. The items are the nodes. An answer with "errors" fails the list with CodeAPI
// (its message names the first error's message and path), the items of the pages before it
// delivered, unless the description says "graphql": {"allow_partial": true}; a GraphQL rate
// limit (RATE_LIMITED, THROTTLED) is waited out, and a failed page sent again (a query, never a
// mutation). The connection is added to the description once every option has been applied,
// over a Preset or Description given before or after it (whose "graphql" object, with its
// "first", "after", "page_size", "allow_partial" and "nested", it keeps; the connection's paging
// and signals replace theirs, but for the identity). Nested completes the connections inside each
// node that the query cuts short.
func GraphQL(query string, variables map[string]any, connection string) ListOption {
	return func(l *List) error {
		if connection == "" {
			return usage(CodeInvalidArgument, "a GraphQL list needs its connection: the JSON pointer to it in the answer (\"/data/repository/issues\")")
		}
		if variables == nil {
			variables = map[string]any{}
		}
		var body bytes.Buffer
		encoder := json.NewEncoder(&body)
		encoder.SetEscapeHTML(false)
		err := encoder.Encode(struct {
			Query     string         `json:"query"`
			Variables map[string]any `json:"variables"`
		}{query, variables})
		if err != nil {
			return usage(CodeInvalidArgument, "the GraphQL variables cannot be sent as JSON: "+err.Error())
		}
		if err := Body("POST", "application/json", bytes.TrimSpace(body.Bytes()))(l); err != nil {
			return err
		}
		l.connection = connection
		return nil
	}
}

// NestedConnection is a connection inside each node of a GraphQL list that the list's query cuts
// short (an issue's comments(first: 5) of 40), completed by a query of its own: an entry of the
// description's "graphql" "nested" (include/sheaf/description.schema.json). Field and Query are
// required; a field left zero is the library's default.
type NestedConnection struct {
	Field      string `json:"field"`                // the connection inside each node ("/comments")
	Query      string `json:"query"`                // the query that pages one node's connection
	Connection string `json:"connection,omitempty"` // where it is in that query's answer; "": "/data/node" and Field
	First      string `json:"first,omitempty"`      // the query's page-size variable; "": "first"
	After      string `json:"after,omitempty"`      // its cursor variable; "": "after"
	ID         string `json:"id,omitempty"`         // the variable of the node's id, and the node's field that holds it; "": "id"
	PageSize   int64  `json:"page_size,omitempty"`  // the size sent in First; 0: 100
}

// Nested completes the connection at field inside each node of a GraphQL list (GraphQL, or a
// Description with a "graphql" object), such as an issue's comments that the list's query cuts
// short at comments(first: 5): for each node whose connection there says pageInfo.hasNextPage,
// the library fetches the rest with query, which takes $id (the node's id), $first (100) and
// $after (the node's endCursor, then the last page's), and finds the connection in its answer at
// "/data/node" and field (GitHub's node(id: $id) { ... on Issue { comments(first: $first,
// after: $after) { ... } } }). The node is then delivered whole: its nodes (or edges) hold all of
// them, pageInfo.hasNextPage is false, and a totalCount that disagrees fails the list with
// CodeIncomplete. Those requests share the origin's window with the list, which goes on meanwhile
// and keeps its order. A nested connection that fails fails the list (CodeAPI for a GraphQL
// error), its message naming the connection and the node's id, the items of the pages before it
// delivered. A field given again replaces the earlier entry; NestedConnections sets the rest of
// an entry (its page size, its variables' names, where the connection is in the answer). Like
// the connection, the entries are added to the description once every option has been applied.
func Nested(field, query string) ListOption {
	return NestedConnections(NestedConnection{Field: field, Query: query})
}

// NestedConnections completes each of connections inside each node of a GraphQL list, as Nested
// does, with the parts of an entry Nested leaves to the library's defaults.
func NestedConnections(connections ...NestedConnection) ListOption {
	return func(l *List) error {
		for _, nested := range connections {
			if nested.Field == "" || nested.Query == "" {
				return usage(CodeInvalidArgument, "a nested connection needs its field (the JSON pointer to it inside each node, \"/comments\") and the query that pages it")
			}
		}
		l.nested = append(l.nested, connections...)
		return nil
	}
}

// describeGraphQL adds {"graphql": {"connection": l.connection, "nested": l.nested}} to what the
// list's description pins so far (its printed form, which sheaf_list_set_description takes back):
// its preset, "read_only", "until", "since", "split" and identity stay, a "graphql" object keeps
// its other parts (an entry of its "nested" stays unless l.nested has one of the same field); its
// paging and other signals are left out, being the connection's. Without l.connection, the
// description's "graphql" connection is kept (there must be one).
func (l *List) describeGraphQL() error {
	printed, err := description(l.c)
	if err != nil {
		return err
	}
	var document map[string]json.RawMessage
	if err := json.Unmarshal([]byte(printed), &document); err != nil {
		return usage(CodeInternal, "the library printed a description that is not a JSON object: "+err.Error())
	}
	graphQL := map[string]json.RawMessage{}
	if given := document["graphql"]; len(given) > 0 && string(given) != "null" {
		if err := json.Unmarshal(given, &graphQL); err != nil {
			return usage(CodeInternal, "the library printed a \"graphql\" that is not a JSON object: "+err.Error())
		}
	}
	if l.connection != "" {
		graphQL["connection"], _ = json.Marshal(l.connection)
	} else if _, found := graphQL["connection"]; !found {
		return usage(CodeInvalidArgument, "Nested goes with a GraphQL list: the GraphQL option, or a Description with a \"graphql\" connection")
	}
	if len(l.nested) > 0 {
		var entries []json.RawMessage
		if given := graphQL["nested"]; len(given) > 0 && string(given) != "null" {
			if err := json.Unmarshal(given, &entries); err != nil {
				return usage(CodeInternal, "the library printed a \"graphql\" \"nested\" that is not a JSON array: "+err.Error())
			}
		}
		for _, nested := range l.nested {
			kept := entries[:0]
			for _, entry := range entries {
				var named struct {
					Field string `json:"field"`
				}
				if json.Unmarshal(entry, &named) != nil || named.Field != nested.Field {
					kept = append(kept, entry)
				}
			}
			text, err := json.Marshal(nested)
			if err != nil {
				return usage(CodeInternal, "a nested connection could not be written as JSON: "+err.Error())
			}
			entries = append(kept, text)
		}
		graphQL["nested"], _ = json.Marshal(entries)
	}
	document["graphql"], _ = json.Marshal(graphQL)
	var signals map[string]json.RawMessage
	_ = json.Unmarshal(document["signals"], &signals)
	delete(document, "paging")
	delete(document, "signals")
	delete(document, "plan")
	if identity, found := signals["identity"]; found {
		document["signals"], _ = json.Marshal(map[string]json.RawMessage{"identity": identity})
	}
	text, err := json.Marshal(document)
	if err != nil {
		return usage(CodeInternal, "the description could not be written again: "+err.Error())
	}
	return Description(string(text))(l)
}

func budget(which C.sheaf_budget, value int64) ListOption {
	return func(l *List) error {
		return call(func() C.sheaf_result { return C.sheaf_list_set_budget(l.c, which, C.int64_t(value)) })
	}
}

// MaxItems stops the list after n items (StopItemLimit; 0: no limit).
func MaxItems(n int64) ListOption {
	return func(l *List) error {
		if err := budget(C.SHEAF_BUDGET_ITEMS, n)(l); err != nil {
			return err
		}
		l.maxItems = n
		return nil
	}
}

// PageBudget stops the list after n pages (StopPageBudget when more follow).
func PageBudget(n int64) ListOption { return budget(C.SHEAF_BUDGET_PAGES, n) }

// RequestBudget stops the list after n requests, retries and redirects included (StopRequestBudget).
func RequestBudget(n int64) ListOption { return budget(C.SHEAF_BUDGET_REQUESTS, n) }

// Deadline ends the list d after its start with CodeDeadline (a context deadline does the same,
// as CodeCancelled).
func Deadline(d time.Duration) ListOption {
	return budget(C.SHEAF_BUDGET_DEADLINE_MS, d.Milliseconds())
}

// Resume goes on where the run that gave token (Result.ResumeToken) stopped, with the item after
// the last one that run delivered; "" does nothing. A token is refused with CodeInvalidArgument
// when it is not one, and when the list runs if it was made by another list.
func Resume(token string) ListOption {
	return func(l *List) error {
		if token == "" {
			return nil
		}
		library, passOver, err := splitToken(token)
		if err != nil {
			return err
		}
		if err := call(withCString(library, func(t *C.char) C.sheaf_result { return C.sheaf_list_set_resume(l.c, t) })); err != nil {
			return err
		}
		l.passOver = passOver
		return nil
	}
}

// eachTokenPrefix starts the token of an Each that stopped inside a snapshot:
// "sheaf-go-resume-1.<n>.<the library's token>". The library's token goes on at the start of that
// snapshot (sheaf_list_resume_token before it was taken), and n of its items were given to fn: a
// list resumed from it passes over its first n items. The library's tokens go on after whole
// snapshots only (a snapshot is a page or more, and where its pages begin is not told), so no
// library token says "inside this snapshot"; only this package reads this form
// (sheaf_list_set_resume and the other bindings refuse it as not a token).
const eachTokenPrefix = "sheaf-go-resume-1."

// joinToken is the token that goes on passOver items after where the library's token does.
func joinToken(library string, passOver int64) string {
	if passOver <= 0 || library == "" {
		return library
	}
	return eachTokenPrefix + strconv.FormatInt(passOver, 10) + "." + library
}

// splitToken reads a token: the library's token, and the items to pass over after it.
func splitToken(token string) (library string, passOver int64, err error) {
	rest, ours := strings.CutPrefix(token, eachTokenPrefix)
	if !ours {
		return token, 0, nil
	}
	count, library, found := strings.Cut(rest, ".")
	n, parseErr := strconv.ParseInt(count, 10, 64)
	if !found || parseErr != nil || n < 1 || n > 1<<53 || strconv.FormatInt(n, 10) != count || library == "" {
		return "", 0, usage(CodeInvalidArgument, "not a resume token of this version of Sheaf: "+
			eachTokenPrefix+" is followed by a count of items and the library's token (was it edited?)")
	}
	return library, n, nil
}

// Presets are the names of the presets the library knows.
func Presets() []string {
	names := make([]string, 0, int(C.sheaf_preset_count()))
	for i := C.size_t(0); i < C.sheaf_preset_count(); i++ {
		names = append(names, C.GoString(C.sheaf_preset_name(i)))
	}
	return names
}

// Description is the list's description as JSON: before the run, what is pinned; after it, what
// the run used.
func (l *List) Description() (string, error) {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c == nil {
		return l.result.Description, nil
	}
	return description(c)
}

func description(c *C.sheaf_list) (string, error) {
	var out *C.char
	if err := call(func() C.sheaf_result { return C.sheaf_list_description(c, &out, nil) }); err != nil {
		return "", err
	}
	return takeString(out), nil
}

// Cancel asks a running list to stop: its run returns a *Error of CodeCancelled. Any goroutine may
// call it, at any time; it does nothing before the run and after it.
func (l *List) Cancel() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil && l.started {
		C.sheaf_list_cancel(l.c)
	}
}

// Close frees the list, cancelling it if it runs. Its run frees it already; Close is then a no-op.
func (l *List) Close() {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c != nil {
		C.sheaf_list_free(c)
	}
}

// Result is how the run ended (the zero Result before it has).
func (l *List) Result() Result { return l.result }

// FetchAll runs the list to its end and returns every item, in order and de-duplicated, with how
// it ended. On failure it returns the items delivered before it with the error.
func (l *List) FetchAll(ctx context.Context) ([]json.RawMessage, Result, error) {
	var items []json.RawMessage
	err := l.run(ctx, func(delta []byte, passOver int) (int, error) {
		var batch []json.RawMessage
		if err := json.Unmarshal(delta, &batch); err != nil {
			return passOver, err
		}
		items = append(items, batch[passOver:]...)
		return len(batch), nil
	})
	return items, l.result, err
}

// FetchAllInto runs list to its end and decodes every item into a T with encoding/json; how it
// ended is list.Result(). On failure it returns the items decoded before it with the error.
func FetchAllInto[T any](ctx context.Context, list *List) ([]T, error) {
	var items []T
	err := list.run(ctx, func(delta []byte, passOver int) (int, error) {
		var batch []T
		if err := json.Unmarshal(delta, &batch); err != nil {
			return passOver, err
		}
		items = append(items, batch[passOver:]...)
		return len(batch), nil
	})
	return items, err
}

// Each runs the list and calls fn with each item, in order, as the pages arrive (fn runs on the
// caller's goroutine; the item is its own copy). Fetching goes on ahead of fn, up to a window of
// pages, and waits when fn is slower. When fn returns an error, the run is cancelled and Each
// returns that error; when ctx ends, the run is cancelled, fn is not called again, and Each returns
// a *Error of CodeCancelled that wraps ctx.Err(). Result then says StopFailed, and its resume token
// goes on with the item after the last one fn was given (the one it returned the error for
// included), so a list resumed from it delivers every other item once. Items come in snapshots
// (a page or more); a token of an Each that stopped inside one is this package's (it starts
// "sheaf-go-resume-1."): Resume reads it, sheaf_list_set_resume and the other bindings do not.
// FetchAll and FetchAllInto take whole snapshots, so theirs is the library's token.
func (l *List) Each(ctx context.Context, fn func(item json.RawMessage) error) error {
	return l.run(ctx, func(delta []byte, passOver int) (int, error) {
		var batch []json.RawMessage
		if err := json.Unmarshal(delta, &batch); err != nil {
			return passOver, err
		}
		for i := passOver; i < len(batch); i++ {
			if err := fn(batch[i]); err != nil {
				return i + 1, err // fn was given it
			}
			if ctx.Err() != nil {
				return i + 1, nil // the loop sees it
			}
		}
		return len(batch), nil
	})
}

// run starts the list pulled (sheaf_list_start_pull) and takes its snapshots on this goroutine
// (sheaf_list_next): no library thread calls into Go for them. ctx's end cancels the C list from
// the goroutine of context.AfterFunc (sheaf_list_cancel is callable from any thread), which wakes
// sheaf_list_next. onDelta gets each snapshot's items as a JSON array, borrowed for the call, and
// how many of its first items to pass over (given to the caller by an earlier run); it returns how
// many of the snapshot's items are behind the caller now (those passed over included): all of
// them, unless the caller stopped inside the snapshot. When the run ends, its result is read, the
// resume token made to go on after the last item the caller was given, and the C list freed.
func (l *List) run(ctx context.Context, onDelta func(delta []byte, passOver int) (int, error)) (err error) {
	l.mu.Lock()
	c := l.c
	if c == nil || l.started {
		l.mu.Unlock()
		return usage(CodeState, "a list runs once: this one has run or was closed")
	}
	if err := ctx.Err(); err != nil {
		l.mu.Unlock()
		return &Error{Code: CodeCancelled, Message: "the context ended before the list started", JSONOffset: -1, cause: err}
	}
	err = call(func() C.sheaf_result { return C.sheaf_list_start_pull(c) })
	l.started = err == nil
	l.mu.Unlock()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, l.Cancel)
	var stopped error          // onDelta's error
	ended := false             // sheaf_list_next said the end: every snapshot was taken
	passOver := l.passOver     // items still to pass over
	inside := false            // the caller stopped inside the last snapshot taken
	var before string          // then: the library's token before that snapshot
	var behind, notGiven int64 // then: its items behind the caller, and those it was not given
	for stopped == nil && ctx.Err() == nil {
		token := resumeToken(c) // through the snapshots taken: where the next one begins
		var snapshot *C.sheaf_snapshot
		if err := call(func() C.sheaf_result { return C.sheaf_list_next(c, -1, &snapshot) }); err != nil {
			stopped = err
			break
		}
		if snapshot == nil {
			ended = true
			break
		}
		n := int64(snapshot.delta_items)
		if n == 0 {
			continue
		}
		if passOver >= n { // given to the caller by the run that made the token
			passOver -= n
			continue
		}
		skip := passOver
		passOver = 0
		delta := unsafe.Slice((*byte)(unsafe.Pointer(snapshot.delta_json)), int(snapshot.delta_length))
		done, err := onDelta(delta, int(skip))
		stopped = err
		if int64(done) < n {
			inside, before, behind, notGiven = true, token, int64(done), n-int64(done)
			break
		}
	}
	stop()
	if !ended {
		// Cancelled before sheaf_list_wait, which would otherwise stop a pulled list that still
		// runs with SHEAF_E_STOPPED; the snapshots not taken are dropped, so the resume token
		// goes on after the last item handed to the caller.
		C.sheaf_list_cancel(c)
	}
	outcome := l.finish(c)
	// The library's counts and token end after the last snapshot taken; the caller's end after the
	// last item it was given.
	l.result.Items -= l.passOver - passOver
	switch {
	case inside:
		l.result.Items -= notGiven
		l.result.ResumeToken = joinToken(before, behind)
	case passOver > 0: // stopped (a budget, a cancel) while passing over: they still are to be
		l.result.ResumeToken = joinToken(l.result.ResumeToken, passOver)
	}
	if ended {
		if outcome == nil {
			return nil
		}
		if cause := ctx.Err(); cause != nil && outcome.Code == CodeCancelled {
			outcome.cause = cause // the context's cancel, seen by the library first
		}
		return outcome
	}
	// Left early: the caller did not get every item, whatever the library's outcome (the list may
	// have ended with snapshots not taken, which sheaf_list_wait dropped).
	l.result.StopReason = StopFailed
	if stopped != nil {
		return stopped
	}
	cause := ctx.Err()
	if outcome == nil {
		outcome = &Error{JSONOffset: -1}
	}
	outcome.Code, outcome.cause = CodeCancelled, cause
	if !strings.Contains(outcome.Message, "cancel") {
		outcome.Message = "the list was cancelled: " + cause.Error()
	}
	return outcome
}

// finish reads the outcome of a run whose snapshots were taken (or that was cancelled), then
// frees the C list.
func (l *List) finish(c *C.sheaf_list) *Error {
	result := C.sheaf_list_wait(c)
	l.result = readResult(c)
	l.result.Description, _ = description(c)
	var outcome *Error
	if result != C.SHEAF_OK {
		outcome = takeError(C.sheaf_list_error(c), result)
	}
	l.Close()
	return outcome
}

// readResult reads where an ended list stands and its resume token (not its description).
func readResult(c *C.sheaf_list) Result {
	var status C.sheaf_list_status
	status.version = C.SHEAF_LIST_STATUS_VERSION
	C.sheaf_list_get_status(c, &status)
	return Result{
		StopReason:    StopReason(status.stop_reason),
		ResumeToken:   resumeToken(c),
		Items:         int64(status.items),
		Pages:         int64(status.pages),
		ExpectedItems: int64(status.expected_items),
		Requests:      int64(status.requests_made),
	}
}

// resumeToken is the library's token after the snapshots taken so far ("" when nothing is left).
func resumeToken(c *C.sheaf_list) string {
	var token *C.char
	C.sheaf_list_resume_token(c, &token)
	return takeString(token)
}
