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
)

// Partition is one range of a list's pages, as List.Partitions plans it: a self-contained value
// that any process runs on a client of its own (WithPartition, Client.FetchPartition) to get
// exactly that range's items, in order. The partitions of one plan cover the list exactly once.
//
// Its one form is the library's partition JSON: String, MarshalText and MarshalJSON give it;
// ParsePartition, UnmarshalText and UnmarshalJSON read it back without a client. The library
// checks every field when the partition is set on a list; reading one here checks only that it is
// a JSON object of a partition, and a field of the wrong type reads as its zero value. A
// partition holds no credential and no secret query value: the client that runs it sends its own.
// The zero Partition is no partition: WithPartition refuses it.
type Partition struct {
	text   string
	fields partitionFields
}

// partitionFields are the fields of the partition JSON that a caller reads.
type partitionFields struct {
	index, count            int
	url, why                string
	firstPage, pages        int64
	pageSize, itemsExpected int64
	window                  int
	openEnded               bool
}

// ParsePartition reads a partition from its JSON text (what String printed). It refuses, with
// CodeInvalidArgument, text that is not a JSON object with a "sheaf_partition" field.
func ParsePartition(text string) (Partition, error) {
	var p Partition
	if err := p.UnmarshalText([]byte(text)); err != nil {
		return Partition{}, err
	}
	return p, nil
}

// UnmarshalText reads a partition from its JSON text, as ParsePartition does.
func (p *Partition) UnmarshalText(text []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(text, &raw); err != nil || raw == nil {
		return usage(CodeInvalidArgument, "a partition is a JSON object (List.Partitions makes them)")
	}
	if _, ok := raw["sheaf_partition"]; !ok {
		return usage(CodeInvalidArgument, `not a partition: it has no "sheaf_partition" field (List.Partitions makes them)`)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, text); err != nil {
		return usage(CodeInvalidArgument, "the partition is not JSON: "+err.Error())
	}
	// Each field alone: one of the wrong type stays zero here, and the library names it when the
	// partition is set.
	read := func(name string, into any) { _ = json.Unmarshal(raw[name], into) }
	f := partitionFields{itemsExpected: -1} // null and absent both leave -1
	read("index", &f.index)
	read("count", &f.count)
	read("url", &f.url)
	read("why", &f.why)
	read("first_page", &f.firstPage)
	read("pages", &f.pages)
	read("page_size", &f.pageSize)
	read("items_expected", &f.itemsExpected)
	read("window", &f.window)
	read("open_ended", &f.openEnded)
	p.text, p.fields = compact.String(), f
	return nil
}

// UnmarshalJSON reads a partition embedded in JSON as its object.
func (p *Partition) UnmarshalJSON(data []byte) error { return p.UnmarshalText(data) }

// String is the partition's JSON text, "" for the zero Partition.
func (p Partition) String() string { return p.text }

// MarshalText is the partition's JSON text; the zero Partition is refused.
func (p Partition) MarshalText() ([]byte, error) {
	if p.text == "" {
		return nil, usage(CodeInvalidArgument, "the zero Partition is no partition")
	}
	return []byte(p.text), nil
}

// MarshalJSON embeds the partition as its JSON object.
func (p Partition) MarshalJSON() ([]byte, error) { return p.MarshalText() }

// Index is the partition's place in its plan, from 0.
func (p Partition) Index() int { return p.fields.index }

// Count is the number of partitions of its plan.
func (p Partition) Count() int { return p.fields.count }

// URL is the list's first URL, without credentials or secret query values.
func (p Partition) URL() string { return p.fields.url }

// FirstPage is the range's first page, counted from 0.
func (p Partition) FirstPage() int64 { return p.fields.firstPage }

// Pages is the range's pages as planned (the open-ended last partition may read more).
func (p Partition) Pages() int64 { return p.fields.pages }

// OpenEnded says whether the range goes on to the list's end (the last partition of a plan).
func (p Partition) OpenEnded() bool { return p.fields.openEnded }

// PageSize is the size page one was served.
func (p Partition) PageSize() int64 { return p.fields.pageSize }

// ItemsExpected is the range's items by the server's total, or -1 when unknown.
func (p Partition) ItemsExpected() int64 { return p.fields.itemsExpected }

// Window is the most requests the partition's run has in flight (the planning client's maximum
// window shared out among the partitions), or 0 when the partition does not say.
func (p Partition) Window() int { return p.fields.window }

// Why says why the list was not split (it is then one partition covering all of it); "" when it was.
func (p Partition) Why() string { return p.fields.why }

// Partitions splits the list into up to n partitions, for several processes or machines to read
// it: it reads the list's page one (its items are not kept; partition 0 fetches it again) and
// plans contiguous ranges of pages, the last one open-ended. A list whose pages are not addressed
// (next links, cursors) or whose page count page one does not tell is one partition, its Why
// saying so. The list stays unstarted: it may be run afterwards, or closed.
//
// ctx is checked before page one is requested; the library cannot cancel the read of page one
// once it has begun (the client's timeout and the list's Deadline bound it). Errors: a *Error of
// CodeInvalidArgument for n below 1 or a list with a resume token or a partition set, CodeState
// for a list that has run or was closed, and page one's failure as FetchAll would report it.
//
// Each partition's Window is the client's maximum window (WithAdaptiveWindow) shared among all
// n; PartitionsAtOnce shares it among those that run at the same time.
func (l *List) Partitions(ctx context.Context, n int) ([]Partition, error) {
	return l.PartitionsAtOnce(ctx, n, n)
}

// PartitionsAtOnce is Partitions for a plan of which at most atOnce partitions run at the same
// time (the workers that read them): each partition's Window is the client's maximum window
// shared among min(n, atOnce) of them, so that 8 partitions read two at a time send what one
// process would, not a quarter of it. More running at once than atOnce would send more. Errors:
// as Partitions, and CodeInvalidArgument for atOnce below 1.
func (l *List) PartitionsAtOnce(ctx context.Context, n, atOnce int) ([]Partition, error) {
	if l == nil {
		return nil, usage(CodeInvalidArgument, "Partitions needs a list, not nil")
	}
	l.mu.Lock()
	defer l.mu.Unlock() // Cancel and Close wait: the C list is in use until the plan returns
	if l.c == nil || l.started {
		return nil, usage(CodeState, "a list is split before it runs: this one has run or was closed")
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: CodeCancelled, Message: "the context ended before the list was split", JSONOffset: -1, cause: err}
	}
	var out *C.char
	c := l.c
	if err := call(func() C.sheaf_result { return C.sheaf_list_partitions_at_once(c, C.int64_t(n), C.int64_t(atOnce), &out, nil) }); err != nil {
		return nil, err
	}
	var planned []json.RawMessage
	if err := json.Unmarshal([]byte(takeString(out)), &planned); err != nil {
		return nil, usage(CodeInternal, "the library printed partitions that are not a JSON array: "+err.Error())
	}
	partitions := make([]Partition, len(planned))
	for i, text := range planned {
		if err := partitions[i].UnmarshalText(text); err != nil {
			return nil, err
		}
	}
	return partitions, nil
}

// WithPartition sets the list to run exactly partition p: p's URL and description replace the
// list's path, query, paging and signals; budgets, headers, query parameters and a resume token
// given as other options still apply. The list's client sends its credential and secret query
// values. A malformed partition is refused with CodeInvalidArgument, the message naming the
// field; one whose URL is not on the client's origin is refused when the list runs.
func WithPartition(p Partition) ListOption {
	return func(l *List) error {
		if p.text == "" {
			return usage(CodeInvalidArgument, "the zero Partition is no partition (List.Partitions makes them)")
		}
		return call(withCString(p.text, func(t *C.char) C.sheaf_result { return C.sheaf_list_set_partition(l.c, t) }))
	}
}

// FetchPartition fetches exactly the items of partition p on this client, in order, as
// List.FetchAll does: a list at p's URL with WithPartition(p), then opts (budgets, Query for a
// secret of the list's own, Resume with a token of the same partition). The run ends StopComplete
// when the range is done.
func (c *Client) FetchPartition(ctx context.Context, p Partition, opts ...ListOption) ([]json.RawMessage, Result, error) {
	if c == nil {
		return nil, Result{}, usage(CodeInvalidArgument, "FetchPartition needs a client, not nil")
	}
	if p.text == "" {
		return nil, Result{}, usage(CodeInvalidArgument, "the zero Partition is no partition (List.Partitions makes them)")
	}
	list, err := c.List(p.URL(), append([]ListOption{WithPartition(p)}, opts...)...)
	if err != nil {
		return nil, Result{}, err
	}
	defer list.Close()
	return list.FetchAll(ctx)
}
