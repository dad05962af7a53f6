package sheaf

/*
#include <stdlib.h>
#include <sheaf.h>
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"unsafe"
)

// A group runs many lists of one client as one job (sheaf_group): the lists share the client's
// window for each origin, so 300 lists started together send what one list would. Client.Many
// makes a group of lists given by path, Client.Fanout one whose parent list's items name child
// lists; FetchAll runs it to its end and Each streams it. Client.FetchMany and Client.FetchEach
// do both steps at once.
//
// A group is pulled on the caller's goroutine, as a List is (sheaf_group_start_pull,
// sheaf_group_next): no library thread calls into Go. The C lists keep no items; the deltas carry
// them.

// Missing says what a fan-out does with a parent item that lacks a value its template needs
// (missing, null, an object, an empty string in the path).
type Missing int

const (
	MissingSkip Missing = iota // skip the item, with a warning log record (the default)
	MissingFail                // fail the parent list
)

// GroupOption configures a group in Client.Many, Client.Fanout, Client.FetchMany and
// Client.FetchEach.
type GroupOption func(*groupConfig) error

type groupConfig struct {
	ordered, failFast bool
	missing           Missing
	lists             []ListOption // every list of Many; the parent of Fanout
	children          []ListOption // the children of Fanout (its last level)
	childrenGiven     bool         // ChildOptions was given (refused by Many)
	tags              []string     // Many: one per path
	resume            []string     // Many: one per path; Fanout: the parent's
}

// Ordered delivers the deltas list after list, in the order the lists joined (a fan-out: the
// parent's item order); a list waiting its turn fetches at most a window of pages ahead. Off (the
// default): as they arrive, each list's own deltas still in order.
func Ordered(on bool) GroupOption {
	return func(g *groupConfig) error { g.ordered = on; return nil }
}

// FailFast makes the first list that fails cancel the others; the group then ends with that
// list's error. Off (the default): a failed list does not stop the others, and the group ends
// with a *Error of CodePartial.
func FailFast(on bool) GroupOption {
	return func(g *groupConfig) error { g.failFast = on; return nil }
}

// MissingValues says what a fan-out does with a parent item without a value its template needs.
func MissingValues(m Missing) GroupOption {
	return func(g *groupConfig) error {
		if m != MissingSkip && m != MissingFail {
			return usage(CodeInvalidArgument, fmt.Sprintf("MissingValues takes MissingSkip or MissingFail, not %d", int(m)))
		}
		g.missing = m
		return nil
	}
}

// ListOptions describes every list of Client.Many, or the parent list of Client.Fanout.
func ListOptions(opts ...ListOption) GroupOption {
	return func(g *groupConfig) error { g.lists = append(g.lists, opts...); return nil }
}

// ChildOptions describes the child lists of Client.Fanout (of its last level); undescribed, each
// child's paging is detected from its first page. Its path is the one the template makes.
func ChildOptions(opts ...ListOption) GroupOption {
	return func(g *groupConfig) error {
		g.children, g.childrenGiven = append(g.children, opts...), true
		return nil
	}
}

// Tags names the lists of Client.Many, one tag per path, in order ("" keeps the path as the tag).
func Tags(tags ...string) GroupOption {
	return func(g *groupConfig) error { g.tags = tags; return nil }
}

// ResumeTokens goes on where earlier runs stopped (ListOutcome.Result.ResumeToken): for
// Client.Many one token per path ("" for a list that starts afresh); for Client.Fanout one token,
// the parent's, whose children from there on are fetched.
func ResumeTokens(tokens ...string) GroupOption {
	return func(g *groupConfig) error { g.resume = tokens; return nil }
}

// GroupDelta is what one delta of a group brought (Group.Each).
type GroupDelta struct {
	Index       int               // the list's place in the group (ListOutcome.Index)
	Tag         string            // the list's tag
	URL         string            // the list's first URL, with no credential (sheaf_list_url)
	Parent      bool              // the fan-out's parent, whose one delta is its last
	Items       []json.RawMessage // the items the list gained, in order (none on its last delta)
	ItemCount   int64             // the items the list has delivered so far
	Finished    bool              // the list's last delta
	Err         error             // on the last delta of a list that failed: why (a *Error)
	ResumeToken string            // on the last delta of a list that failed: goes on after its items
}

// ListOutcome is how one list of a group ended.
type ListOutcome struct {
	Index  int    // 0, 1, ... in the order the lists joined (a fan-out's children as the parent's pages brought them)
	Tag    string // the tag given, else the path; a fan-out child's: the value that filled its template
	URL    string // the list's first URL as the library sends it, with no credential (sheaf_list_url)
	Parent bool   // the fan-out's parent (the top one: a middle level's lists are not marked)
	// Items are the items the list delivered, in order, from FetchAll; nil from Each (which hands
	// them over as they come) and for a parent, whose items name its children.
	Items []json.RawMessage
	// Err is why the list failed (a *Error), or nil when it ended whole. A list that the group's
	// end cut short (FailFast, a cancel, an Each left early) has CodeCancelled.
	Err error
	// Result is where the list stands: its stop reason, counts, and the resume token that goes on
	// after Items. Its Description is left empty.
	Result Result
}

// GroupResult is every list of a group, in the order they joined.
type GroupResult struct {
	Lists []ListOutcome
	Err   error // the group's outcome: nil, a *Error of CodePartial, or with FailFast the first failure
}

// Failed are the lists that did not end whole, in order.
func (r *GroupResult) Failed() []ListOutcome {
	var failed []ListOutcome
	if r != nil {
		for _, outcome := range r.Lists {
			if outcome.Err != nil {
				failed = append(failed, outcome)
			}
		}
	}
	return failed
}

// Group is a group of lists of one client (Client.Many, Client.Fanout), run once by FetchAll or
// Each. One goroutine runs it; Cancel may be called from any goroutine. Its run frees the C group
// when it ends; Close frees one that never ran (and cancels one that runs): defer it.
type Group struct {
	client  *Client
	mu      sync.Mutex // guards c against Cancel and Close racing the free
	c       *C.sheaf_group
	started bool
	parent  int             // the fan-out's parent's index, or -1
	members map[int]*member // what the binding knows of each list, filled as they are met
	result  *GroupResult
}

// member is a list of the group as the binding knows it.
type member struct {
	tag, url string
	parent   bool
}

// Many makes a group of the lists at paths (joined to the base URL as List's paths are), each
// described by ListOptions and tagged by Tags. The group owns the lists.
func (c *Client) Many(paths []string, opts ...GroupOption) (*Group, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	if cfg.tags != nil && len(cfg.tags) != len(paths) {
		return nil, usage(CodeInvalidArgument, fmt.Sprintf("Tags gave %d tags for %d paths: one per path", len(cfg.tags), len(paths)))
	}
	if cfg.resume != nil && len(cfg.resume) != len(paths) {
		return nil, usage(CodeInvalidArgument, fmt.Sprintf("ResumeTokens gave %d tokens for %d paths: one per path", len(cfg.resume), len(paths)))
	}
	if cfg.childrenGiven {
		return nil, usage(CodeInvalidArgument, "ChildOptions describes a fan-out's children: Many has none")
	}
	g, err := c.newGroup(cfg)
	if err != nil {
		return nil, err
	}
	for i, path := range paths {
		listOpts := cfg.lists
		if cfg.resume != nil {
			listOpts = append(append([]ListOption(nil), listOpts...), Resume(cfg.resume[i]))
		}
		tag := path
		if cfg.tags != nil && cfg.tags[i] != "" {
			tag = cfg.tags[i]
		}
		if err := g.add(path, tag, listOpts); err != nil {
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

// Fanout makes a group whose parent list, at parentPath (described by ListOptions), names child
// lists: templates[0] makes a child's URL from one parent item, "/repos/{/full_name}/issues"
// filling each {JSON pointer} with the item's value there, percent-encoded for where it stands
// ("/" kept in the path); a template starting with "/" is joined to the parent's origin. More
// templates are more levels: templates[1] makes a grandchild's URL from a child's item, and so on.
// Children join as the parent's pages bring them, once per URL, tagged with the value that filled
// the template, and run as ChildOptions describes.
func (c *Client) Fanout(parentPath string, templates []string, opts ...GroupOption) (*Group, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	if len(templates) == 0 {
		return nil, usage(CodeInvalidArgument, `Fanout needs a template, such as "/repos/{/full_name}/issues"`)
	}
	if cfg.tags != nil {
		return nil, usage(CodeInvalidArgument, "Tags names the lists of Many: a fan-out's children are tagged by their values")
	}
	if len(cfg.resume) > 1 {
		return nil, usage(CodeInvalidArgument, "ResumeTokens takes one token for a fan-out: the parent's")
	}
	g, err := c.newGroup(cfg)
	if err != nil {
		return nil, err
	}
	parentOpts := cfg.lists
	if len(cfg.resume) == 1 {
		parentOpts = append(append([]ListOption(nil), parentOpts...), Resume(cfg.resume[0]))
	}
	if err := g.addEach(parentPath, templates, parentOpts, cfg.children); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// FetchMany runs Many(paths, opts...) to its end (Group.FetchAll).
func (c *Client) FetchMany(ctx context.Context, paths []string, opts ...GroupOption) (*GroupResult, error) {
	g, err := c.Many(paths, opts...)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return g.FetchAll(ctx)
}

// FetchEach runs Fanout(parentPath, templates, opts...) to its end (Group.FetchAll): the parent
// first in the result (Parent set, no items), then each child as the parent's pages brought it.
func (c *Client) FetchEach(ctx context.Context, parentPath string, templates []string, opts ...GroupOption) (*GroupResult, error) {
	g, err := c.Fanout(parentPath, templates, opts...)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return g.FetchAll(ctx)
}

func configure(opts []GroupOption) (*groupConfig, error) {
	cfg := &groupConfig{}
	for _, opt := range opts {
		if opt == nil {
			return nil, usage(CodeInvalidArgument, "a group option is nil")
		}
		if err := opt(cfg); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// newGroup makes the C group with cfg's options, remembered by the client until it is freed.
func (c *Client) newGroup(cfg *groupConfig) (*Group, error) {
	g := &Group{client: c, parent: -1, members: map[int]*member{}}
	err := c.use(func(client *C.sheaf_client) error {
		if err := call(func() C.sheaf_result { return C.sheaf_group_new(&g.c, client) }); err != nil {
			return err
		}
		c.remember(g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	flag := func(on bool) C.int64_t {
		if on {
			return 1
		}
		return 0
	}
	for _, option := range []struct {
		which C.sheaf_group_option
		value C.int64_t
	}{
		{C.SHEAF_GROUP_ORDERED, flag(cfg.ordered)},
		{C.SHEAF_GROUP_FAIL_FAST, flag(cfg.failFast)},
		{C.SHEAF_GROUP_MISSING_FAILS, flag(cfg.missing == MissingFail)},
	} {
		if err := call(func() C.sheaf_result { return C.sheaf_group_set_option(g.c, option.which, option.value) }); err != nil {
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

// takeList makes a list of the group's client, described by opts and kept without items (the
// deltas carry them), and takes its C list from the Go List, which is left closed.
func (g *Group) takeList(path string, opts []ListOption) (*C.sheaf_list, error) {
	list, err := g.client.List(path, opts...)
	if err != nil {
		return nil, err
	}
	if list.passOver > 0 {
		list.Close()
		return nil, usage(CodeInvalidArgument, "a token of an Each that stopped inside a snapshot ("+eachTokenPrefix+
			"...) resumes a List (Client.List with Resume), not a list of a group")
	}
	list.mu.Lock()
	c := list.c
	list.c = nil
	list.mu.Unlock()
	if err := call(func() C.sheaf_result { return C.sheaf_list_set_keep_items(c, 0) }); err != nil {
		C.sheaf_list_free(c)
		return nil, err
	}
	return c, nil
}

func (g *Group) add(path, tag string, opts []ListOption) error {
	list, err := g.takeList(path, opts)
	if err != nil {
		return err
	}
	var index C.size_t
	err = call(withCString(tag, func(t *C.char) C.sheaf_result { return C.sheaf_group_add(g.c, list, t, &index) }))
	if err != nil {
		C.sheaf_list_free(list) // a refused add leaves the list the caller's
		return err
	}
	g.members[int(index)] = &member{tag: tag}
	return nil
}

func (g *Group) addEach(parentPath string, templates []string, parentOpts, childOpts []ListOption) error {
	parent, err := g.takeList(parentPath, parentOpts)
	if err != nil {
		return err
	}
	child, err := g.takeList("", childOpts)
	if err != nil {
		C.sheaf_list_free(parent)
		return err
	}
	if hasNUL(templates...) {
		C.sheaf_list_free(parent)
		C.sheaf_list_free(child)
		return nulError()
	}
	// The templates in C memory, as one array of pointers: C holds no Go pointer.
	array := unsafe.Slice((**C.char)(C.malloc(C.size_t(len(templates))*C.size_t(unsafe.Sizeof((*C.char)(nil))))), len(templates))
	for i, template := range templates {
		array[i] = cString(template)
	}
	defer func() {
		for _, s := range array {
			C.free(unsafe.Pointer(s))
		}
		C.free(unsafe.Pointer(&array[0]))
	}()
	var index C.size_t
	err = call(func() C.sheaf_result {
		return C.sheaf_group_add_each(g.c, parent, (**C.char)(unsafe.Pointer(&array[0])), C.size_t(len(templates)), child, &index)
	})
	if err != nil {
		C.sheaf_list_free(parent) // a refused add leaves both lists the caller's
		C.sheaf_list_free(child)
		return err
	}
	g.parent = int(index)
	g.members[g.parent] = &member{tag: parentPath, parent: true}
	return nil
}

// Cancel asks a running group to stop every list: its run returns a *Error of CodeCancelled. Any
// goroutine may call it, at any time; it does nothing before the run and after it.
func (g *Group) Cancel() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.c != nil && g.started {
		C.sheaf_group_cancel(g.c)
	}
}

// Close frees a group that never ran, with its lists; on a group that runs, it cancels it and its
// run frees it. Its run frees it already; Close is then a no-op.
func (g *Group) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	c := g.c
	if c == nil || g.started {
		if c != nil {
			C.sheaf_group_cancel(c)
		}
		g.mu.Unlock()
		return
	}
	g.c = nil
	g.mu.Unlock()
	C.sheaf_group_free(c)
	g.client.forget(g)
}

// Result is how the run ended (nil before it has).
func (g *Group) Result() *GroupResult {
	if g == nil {
		return nil
	}
	return g.result
}

// FetchAll runs the group to its end and returns every list's outcome with its items. When some
// lists failed, the others are whole and the error is a *Error of CodePartial (with FailFast, the
// first failure's); when ctx ends, every list is cancelled and the error is a *Error of
// CodeCancelled that wraps ctx.Err(). The GroupResult is returned in every case the group ran.
func (g *Group) FetchAll(ctx context.Context) (*GroupResult, error) {
	if g == nil {
		return nil, usage(CodeInvalidArgument, "the group is nil")
	}
	before := g.result
	items := map[int][]json.RawMessage{}
	err := g.run(ctx, func(d GroupDelta) error {
		if len(d.Items) > 0 {
			items[d.Index] = append(items[d.Index], d.Items...)
		}
		return nil
	})
	if g.result == before { // it did not run (a second run, a closed group)
		return nil, err
	}
	for i := range g.result.Lists {
		g.result.Lists[i].Items = items[g.result.Lists[i].Index]
	}
	return g.result, err
}

// Each runs the group and calls fn with each delta as it comes, on the caller's goroutine: a
// list's items in order, and on each list's last delta (Finished) how it ended. Nothing is kept.
// Fetching goes on ahead of fn up to a window of pages per list, and waits when fn is slower.
// When fn returns an error, or ctx ends, every list is cancelled, fn is not called again, and
// Each returns fn's error, or a *Error of CodeCancelled wrapping ctx.Err(); Result then holds
// each list's outcome (a list cut short: CodeCancelled, with a resume token). fn must not call
// the client's Close, which waits for the group.
func (g *Group) Each(ctx context.Context, fn func(GroupDelta) error) error {
	if fn == nil {
		return usage(CodeInvalidArgument, "Each needs a function, not nil")
	}
	return g.run(ctx, fn)
}

// run starts the group pulled and takes its deltas on this goroutine until the end, fn's error or
// ctx's end (which cancels the C group from context.AfterFunc's goroutine and wakes
// sheaf_group_next). Then it reads every list's outcome and frees the group.
func (g *Group) run(ctx context.Context, fn func(GroupDelta) error) error {
	if g == nil {
		return usage(CodeInvalidArgument, "the group is nil")
	}
	g.mu.Lock()
	c := g.c
	if c == nil || g.started {
		g.mu.Unlock()
		return usage(CodeState, "a group runs once: this one has run or was closed")
	}
	if err := ctx.Err(); err != nil {
		g.mu.Unlock()
		return &Error{Code: CodeCancelled, Message: "the context ended before the group started", JSONOffset: -1, cause: err}
	}
	err := call(func() C.sheaf_result { return C.sheaf_group_start_pull(c) })
	g.started = err == nil
	g.mu.Unlock()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, g.Cancel)
	freed := false
	defer func() {
		if !freed { // fn panicked: the group still ends and is freed, or Client.Close would wait for it
			C.sheaf_group_cancel(c)
			C.sheaf_group_wait(c)
			g.free(c)
		}
	}()
	ended := map[int]GroupDelta{} // each list's last delta
	var stopped error             // fn's error, or a failed sheaf_group_next
	finished := false             // sheaf_group_next said the end: every delta was taken
	// Bounded: each pass takes one delta of a finite group, or its end; a cancel ends it early.
	for stopped == nil && ctx.Err() == nil {
		var delta *C.sheaf_group_delta
		if err := call(func() C.sheaf_result { return C.sheaf_group_next(c, -1, &delta) }); err != nil {
			stopped = err
			break
		}
		if delta == nil {
			finished = true
			break
		}
		d, err := g.deltaOf(c, delta)
		if err != nil {
			stopped = err
			break
		}
		if d.Finished {
			ended[d.Index] = d
		}
		stopped = fn(d)
	}
	stop()
	if !finished {
		C.sheaf_group_cancel(c) // before the wait, which would drop what is left and report STOPPED
	}
	result := C.sheaf_group_wait(c)
	var outcome *Error
	if result != C.SHEAF_OK {
		outcome = takeError(C.sheaf_group_error(c), result)
	}
	g.result = &GroupResult{Lists: g.outcomes(c, ended)}
	g.free(c)
	freed = true

	if finished && stopped == nil {
		if outcome == nil {
			return nil
		}
		if cause := ctx.Err(); cause != nil && outcome.Code == CodeCancelled {
			outcome.cause = cause
		}
		g.result.Err = outcome
		return outcome
	}
	// Left early: fn's error, or the context's end.
	if stopped != nil {
		g.result.Err = stopped
		return stopped
	}
	cancelled := &Error{Code: CodeCancelled, Message: "the group was cancelled: " + ctx.Err().Error(), JSONOffset: -1, cause: ctx.Err()}
	g.result.Err = cancelled
	return cancelled
}

// free frees the C group of a run that has ended, with its lists, and tells the client.
func (g *Group) free(c *C.sheaf_group) {
	g.mu.Lock()
	g.c = nil
	g.mu.Unlock()
	C.sheaf_group_free(c)
	g.client.forget(g)
}

// member is what the binding knows of the list at index, read from the library when first met
// (a fan-out's children join as the parent's pages come).
func (g *Group) member(c *C.sheaf_group, index int, tag *C.char) *member {
	m := g.members[index]
	if m == nil {
		m = &member{}
		if tag != nil {
			m.tag = C.GoString(tag)
		}
		g.members[index] = m
	}
	if m.url == "" {
		if list := C.sheaf_group_list(c, C.size_t(index)); list != nil {
			var url *C.char
			if C.sheaf_list_url(list, &url) == C.SHEAF_OK {
				m.url = takeString(url)
			}
		}
	}
	return m
}

// deltaOf copies a delta into Go memory (it is the library's until the next sheaf_group_next).
func (g *Group) deltaOf(c *C.sheaf_group, delta *C.sheaf_group_delta) (GroupDelta, error) {
	if delta.version < 1 {
		return GroupDelta{}, usage(CodeInternal, fmt.Sprintf("a group delta of version %d", int(delta.version)))
	}
	index := int(delta.list)
	m := g.member(c, index, delta.tag)
	d := GroupDelta{Index: index, Tag: m.tag, URL: m.url, Parent: m.parent, ItemCount: int64(delta.items),
		Finished: delta.finished != 0}
	if delta.delta_items > 0 {
		raw := unsafe.Slice((*byte)(unsafe.Pointer(delta.delta_json)), int(delta.delta_length))
		if err := json.Unmarshal(raw, &d.Items); err != nil { // json.RawMessage copies
			return GroupDelta{}, err
		}
	}
	if d.Finished && delta.result != C.SHEAF_OK {
		if list := C.sheaf_group_list(c, C.size_t(index)); list != nil {
			d.Err = takeError(C.sheaf_list_error(list), delta.result)
			d.ResumeToken = readResult(list).ResumeToken
		} else {
			d.Err = takeError(nil, delta.result)
		}
	}
	return d, nil
}

// outcomes reads every list of an ended group: a list whose last delta was not taken was cut
// short by the group's end.
func (g *Group) outcomes(c *C.sheaf_group, ended map[int]GroupDelta) []ListOutcome {
	count := int(C.sheaf_group_count(c))
	lists := make([]ListOutcome, 0, count)
	for index := 0; index < count; index++ {
		m := g.member(c, index, nil)
		outcome := ListOutcome{Index: index, Tag: m.tag, URL: m.url, Parent: m.parent}
		if list := C.sheaf_group_list(c, C.size_t(index)); list != nil {
			outcome.Result = readResult(list)
		}
		if last, ok := ended[index]; ok {
			outcome.Err = last.Err
		} else {
			outcome.Err = usage(CodeCancelled, "the list was stopped before its end")
			outcome.Result.StopReason = StopFailed
		}
		lists = append(lists, outcome)
	}
	return lists
}
