package sheaf

/*
#include <stdlib.h>
#include <sheaf.h>
*/
import "C"

import (
	"context"
	"encoding/json"
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
	}
	return "unknown"
}

// Result is how a list's run ended.
type Result struct {
	StopReason    StopReason
	ResumeToken   string // goes on after the items delivered (List option Resume); "" when complete
	Items         int64  // items delivered, after de-duplication
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

func budget(which C.sheaf_budget, value int64) ListOption {
	return func(l *List) error {
		return call(func() C.sheaf_result { return C.sheaf_list_set_budget(l.c, which, C.int64_t(value)) })
	}
}

// MaxItems stops the list after n items (StopItemLimit; 0: no limit).
func MaxItems(n int64) ListOption { return budget(C.SHEAF_BUDGET_ITEMS, n) }

// PageBudget stops the list after n pages (StopPageBudget when more follow).
func PageBudget(n int64) ListOption { return budget(C.SHEAF_BUDGET_PAGES, n) }

// RequestBudget stops the list after n requests, retries and redirects included (StopRequestBudget).
func RequestBudget(n int64) ListOption { return budget(C.SHEAF_BUDGET_REQUESTS, n) }

// Deadline ends the list d after its start with CodeDeadline (a context deadline does the same,
// as CodeCancelled).
func Deadline(d time.Duration) ListOption {
	return budget(C.SHEAF_BUDGET_DEADLINE_MS, d.Milliseconds())
}

// Resume goes on where the run that gave token (Result.ResumeToken) stopped; "" does nothing.
func Resume(token string) ListOption {
	return func(l *List) error {
		if token == "" {
			return nil
		}
		return call(withCString(token, func(t *C.char) C.sheaf_result { return C.sheaf_list_set_resume(l.c, t) }))
	}
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
	err := l.run(ctx, func(delta []byte) error {
		var batch []json.RawMessage
		if err := json.Unmarshal(delta, &batch); err != nil {
			return err
		}
		items = append(items, batch...)
		return nil
	})
	return items, l.result, err
}

// FetchAllInto runs list to its end and decodes every item into a T with encoding/json; how it
// ended is list.Result(). On failure it returns the items decoded before it with the error.
func FetchAllInto[T any](ctx context.Context, list *List) ([]T, error) {
	var items []T
	err := list.run(ctx, func(delta []byte) error {
		var batch []T
		if err := json.Unmarshal(delta, &batch); err != nil {
			return err
		}
		items = append(items, batch...)
		return nil
	})
	return items, err
}

// Each runs the list and calls fn with each item, in order, as the pages arrive (fn runs on the
// caller's goroutine; the item is its own copy). Fetching goes on ahead of fn, up to a window of
// pages, and waits when fn is slower. When fn returns an error, the run is cancelled and Each
// returns that error; when ctx ends, the run is cancelled, fn is not called again, and Each returns
// a *Error of CodeCancelled that wraps ctx.Err(). Result then says StopFailed, and its resume token
// goes on after the last snapshot taken: items come in snapshots (a page or more), and when Each
// stops inside one, the items of it that fn was not given are not resumed by the token.
// FetchAll and FetchAllInto take whole snapshots, so theirs goes on exactly after the items they
// return.
func (l *List) Each(ctx context.Context, fn func(item json.RawMessage) error) error {
	return l.run(ctx, func(delta []byte) error {
		var batch []json.RawMessage
		if err := json.Unmarshal(delta, &batch); err != nil {
			return err
		}
		for _, item := range batch {
			if err := fn(item); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil // the loop sees it
			}
		}
		return nil
	})
}

// run starts the list pulled (sheaf_list_start_pull) and takes its snapshots on this goroutine
// (sheaf_list_next): no library thread calls into Go for them. ctx's end cancels the C list from
// the goroutine of context.AfterFunc (sheaf_list_cancel is callable from any thread), which wakes
// sheaf_list_next. onDelta gets each snapshot's items as a JSON array, borrowed for the call.
// When the run ends, its result is read and the C list freed.
func (l *List) run(ctx context.Context, onDelta func(delta []byte) error) (err error) {
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
	var stopped error // onDelta's error
	ended := false    // sheaf_list_next said the end: every snapshot was taken
	for stopped == nil && ctx.Err() == nil {
		var snapshot *C.sheaf_snapshot
		if err := call(func() C.sheaf_result { return C.sheaf_list_next(c, -1, &snapshot) }); err != nil {
			stopped = err
			break
		}
		if snapshot == nil {
			ended = true
			break
		}
		if snapshot.delta_items == 0 {
			continue
		}
		delta := unsafe.Slice((*byte)(unsafe.Pointer(snapshot.delta_json)), int(snapshot.delta_length))
		stopped = onDelta(delta)
	}
	stop()
	if !ended {
		// Cancelled before sheaf_list_wait, which would otherwise stop a pulled list that still
		// runs with SHEAF_E_STOPPED; the snapshots not taken are dropped, so the resume token
		// goes on after the last item handed to the caller.
		C.sheaf_list_cancel(c)
	}
	outcome := l.finish(c)
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
	var token *C.char
	C.sheaf_list_resume_token(c, &token)
	return Result{
		StopReason:    StopReason(status.stop_reason),
		ResumeToken:   takeString(token),
		Items:         int64(status.items),
		Pages:         int64(status.pages),
		ExpectedItems: int64(status.expected_items),
		Requests:      int64(status.requests_made),
	}
}
