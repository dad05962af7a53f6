package sheaf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"sheaf.dev/sheaf"
	"sheaf.dev/sheaf/internal/testserver"
)

var server *testserver.Server

func TestMain(m *testing.M) {
	var err error
	server, err = testserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		os.Exit(1)
	}
	code := m.Run()
	server.Close()
	os.Exit(code)
}

type item struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// fresh clears the server's counters and makes a client of it, closed when the test ends.
func fresh(t *testing.T, opts ...sheaf.Option) *sheaf.Client {
	t.Helper()
	if err := server.Reset(); err != nil {
		t.Fatal(err)
	}
	client, err := sheaf.NewClient(server.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

func list(t *testing.T, client *sheaf.Client, path string, opts ...sheaf.ListOption) *sheaf.List {
	t.Helper()
	l, err := client.List(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// checkIDs fails unless items are ids from..to-1, in order.
func checkIDs(t *testing.T, items []item, from, to int) {
	t.Helper()
	if len(items) != to-from {
		t.Fatalf("%d items, want %d", len(items), to-from)
	}
	for i, it := range items {
		if it.ID != from+i || it.Name != fmt.Sprintf("item-%d", from+i) {
			t.Fatalf("item %d is %+v, want id %d", i, it, from+i)
		}
	}
}

func TestVersion(t *testing.T) {
	if !strings.HasPrefix(sheaf.Version(), "1.") || sheaf.VersionNumber() < 10000 {
		t.Fatalf("version %q (%d)", sheaf.Version(), sheaf.VersionNumber())
	}
}

func TestConventionsEveryItemInOrder(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		opts       []sheaf.ListOption
	}{
		{"body next link", "/anchor?n=237&per_page=20", nil},
		{"Link header", "/conv/github?n=237&per_page=20", nil},
		{"Link header, preset", "/conv/github?n=237", []sheaf.ListOption{sheaf.Preset("github")}},
		{"page numbers with a total", "/drf?n=237&page_size=20", nil},
		{"X-Next-Page and X-Total", "/conv/gitlab?n=237", nil},
		{"described page numbers", "/array?n=237&per_page=25", []sheaf.ListOption{sheaf.Description(
			`{"paging": {"kind": "page_number", "param": "page", "first": 1}, "signals": {"items": {"source": "body", "where": ""}, "next": null}}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fresh(t)
			items, result, err := list(t, client, tc.path, tc.opts...).FetchAll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			decoded := make([]item, len(items))
			for i, raw := range items {
				if err := json.Unmarshal(raw, &decoded[i]); err != nil {
					t.Fatal(err)
				}
			}
			checkIDs(t, decoded, 0, 237)
			if result.StopReason != sheaf.StopComplete || result.ResumeToken != "" || result.Items != 237 {
				t.Fatalf("result %+v", result)
			}
			if !strings.Contains(result.Description, `"paging"`) {
				t.Fatalf("description %q", result.Description)
			}
		})
	}
}

// A full page that names no next page, total or cursor may be the first of several: the list
// ends StopUnconfirmed, not StopComplete; a short page is a plain end.
func TestAFullPageThatSaysNothingOfMoreEndsUnconfirmed(t *testing.T) {
	client := fresh(t)
	for _, tc := range []struct {
		path   string
		items  int64
		reason sheaf.StopReason
	}{{"/conv/github?n=95&link=none", 30, sheaf.StopUnconfirmed}, {"/conv/github?n=27&link=none", 27, sheaf.StopComplete}} {
		items, result, err := list(t, client, tc.path).FetchAll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(items)) != tc.items || result.StopReason != tc.reason {
			t.Fatalf("%s: %d items, %v; want %d, %v", tc.path, len(items), result.StopReason, tc.items, tc.reason)
		}
	}
}

// A spent quota (the server's GitHub-shaped quota=, 403 past it) stops the list with
// CodeRateLimited before the server refuses a request, with the items paid for and a token.
func TestASpentQuotaIsRateLimitedAndNeverRefused(t *testing.T) {
	client := fresh(t, sheaf.WithMaxWait(0))
	items, result, err := list(t, client, "/anchor?n=500&per_page=10&quota=12:3600").FetchAll(context.Background())
	var serr *sheaf.Error
	if !errors.As(err, &serr) || serr.Code != sheaf.CodeRateLimited || !strings.Contains(serr.Message, "the server's core limit of 12 requests is spent") {
		t.Fatalf("err %v", err)
	}
	if len(items) == 0 || len(items) > 120 || result.ResumeToken == "" {
		t.Fatalf("%d items, token %q", len(items), result.ResumeToken)
	}
	if stats, err := server.Stats(); err != nil || stats.Refused != 0 {
		t.Fatalf("the server refused %d requests (%v)", stats.Refused, err)
	}
}

// A client with a cache re-syncs a list for 304s: the second run pays for no page and gives
// the same items.
func TestACachedReSyncIsAnsweredNotModified(t *testing.T) {
	folder := t.TempDir() + "/cache"
	var first []json.RawMessage
	for run := 0; run < 2; run++ {
		items, _, err := list(t, fresh(t, sheaf.WithCache(folder, 0)), "/anchor?n=95&per_page=10&etag=1").FetchAll(context.Background())
		if err != nil || len(items) != 95 {
			t.Fatalf("run %d: %d items, %v", run, len(items), err)
		}
		if run == 0 {
			first = items
		} else if fmt.Sprint(items) != fmt.Sprint(first) {
			t.Fatal("the cached run gave other items")
		}
	}
	if stats, err := server.Stats(); err != nil || stats.NotModified != 10 {
		t.Fatalf("%d pages answered 304, want 10 (%v)", stats.NotModified, err)
	}
	if _, err := sheaf.NewClient(server.URL, sheaf.WithCache(folder+"/key", 0)); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("a file as the cache folder: %v", err)
	}
}

func TestFetchAllInto(t *testing.T) {
	client := fresh(t)
	l := list(t, client, "/drf?n=95&page_size=10")
	items, err := sheaf.FetchAllInto[item](context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, items, 0, 95)
	if r := l.Result(); r.StopReason != sheaf.StopComplete || r.Pages != 10 || r.ExpectedItems != 95 {
		t.Fatalf("result %+v", r)
	}
	if _, err := sheaf.FetchAllInto[item](context.Background(), l); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("a second run: %v", err)
	}
}

func TestEachInOrder(t *testing.T) {
	client := fresh(t)
	var got []item
	err := list(t, client, "/anchor?n=123&per_page=7").Each(context.Background(), func(raw json.RawMessage) error {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			return err
		}
		got = append(got, it)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, got, 0, 123)
}

func TestEachStopsOnTheCallersError(t *testing.T) {
	client := fresh(t)
	stop := errors.New("enough")
	seen := 0
	l := list(t, client, "/anchor?n=500&per_page=10")
	err := l.Each(context.Background(), func(json.RawMessage) error {
		seen++
		if seen == 15 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 15 {
		t.Fatalf("err %v after %d items", err, seen)
	}
	if l.Result().StopReason != sheaf.StopFailed || l.Result().ResumeToken == "" {
		t.Fatalf("result %+v", l.Result())
	}
}

func TestBudgetStopsAndTheTokenResumes(t *testing.T) {
	client := fresh(t)
	first := list(t, client, "/anchor?n=95&per_page=10", sheaf.MaxItems(25))
	items, err := sheaf.FetchAllInto[item](context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, items, 0, 25)
	r := first.Result()
	if r.StopReason != sheaf.StopItemLimit || !strings.HasPrefix(r.ResumeToken, "sheaf-resume-1.") {
		t.Fatalf("result %+v", r)
	}
	rest, err := sheaf.FetchAllInto[item](context.Background(),
		list(t, client, "/anchor?n=95&per_page=10", sheaf.Resume(r.ResumeToken)))
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, rest, 25, 95)

	pages := list(t, client, "/drf?n=95&page_size=10", sheaf.PageBudget(3))
	items, err = sheaf.FetchAllInto[item](context.Background(), pages)
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, items, 0, 30)
	if r := pages.Result(); r.StopReason != sheaf.StopPageBudget || r.ResumeToken == "" {
		t.Fatalf("result %+v", r)
	}
}

func TestContextCancelStopsTheRun(t *testing.T) {
	client := fresh(t, sheaf.WithWindow(2), sheaf.WithAdaptiveWindow(false, 0))
	goroutines := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := list(t, client, "/anchor?n=5000&per_page=10&latency_ms=50")
	seen := 0
	started := time.Now()
	err := l.Each(ctx, func(json.RawMessage) error {
		seen++
		if seen == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, sheaf.CodeCancelled) {
		t.Fatalf("err %v", err)
	}
	var serr *sheaf.Error
	if !errors.As(err, &serr) || serr.Code != sheaf.CodeCancelled {
		t.Fatalf("err %#v", err)
	}
	if seen != 5 {
		t.Fatalf("fn called %d times after the cancel at 5", seen)
	}
	if time.Since(started) > 5*time.Second {
		t.Fatalf("the cancelled run took %v", time.Since(started))
	}
	r := l.Result()
	if r.StopReason != sheaf.StopFailed || r.ResumeToken == "" {
		t.Fatalf("result %+v", r)
	}
	// No request after the cancel: what the server has seen stays put.
	if requests := requestsSettle(t); requests > 10 {
		t.Fatalf("%d requests for a list cancelled after its first pages", requests)
	}
	// And no goroutine left behind (the AfterFunc's included).
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Fatalf("%d goroutines, %d before the run", n, goroutines)
	}
}

func TestCancelledFetchAllResumesExactly(t *testing.T) {
	client := fresh(t, sheaf.WithWindow(2), sheaf.WithAdaptiveWindow(false, 0))
	const path = "/anchor?n=300&per_page=10&latency_ms=20"
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	first := list(t, client, path)
	got, err := sheaf.FetchAllInto[item](ctx, first)
	if !errors.Is(err, context.DeadlineExceeded) || len(got) == 0 || len(got) == 300 {
		t.Fatalf("err %v after %d items", err, len(got))
	}
	r := first.Result()
	if r.StopReason != sheaf.StopFailed || r.Items != int64(len(got)) || r.ResumeToken == "" {
		t.Fatalf("result %+v, %d items", r, len(got))
	}
	rest, err := sheaf.FetchAllInto[item](context.Background(), list(t, client, path, sheaf.Resume(r.ResumeToken)))
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, append(got, rest...), 0, 300)
}

func TestContextCancelledBeforeTheRun(t *testing.T) {
	client := fresh(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := list(t, client, "/anchor?n=10").FetchAll(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if stats, _ := server.Stats(); stats.Requests != 0 {
		t.Fatalf("%d requests", stats.Requests)
	}
}

func TestListHTTPErrorIsAnError(t *testing.T) {
	client := fresh(t)
	items, result, err := list(t, client, "/anchor?n=50&per_page=10&fail=3:5:404").FetchAll(context.Background())
	var serr *sheaf.Error
	if !errors.As(err, &serr) {
		t.Fatalf("err %#v", err)
	}
	if serr.Code != sheaf.CodeHTTP || serr.HTTPStatus != 404 || !errors.Is(err, sheaf.CodeHTTP) ||
		!strings.Contains(serr.URL, "page=3") || serr.Message == "" {
		t.Fatalf("error %+v", serr)
	}
	if len(items) != 20 || result.StopReason != sheaf.StopFailed {
		t.Fatalf("%d items, result %+v", len(items), result)
	}
}

func TestDoHTTPError(t *testing.T) {
	client := fresh(t)
	response, err := client.Do(context.Background(), sheaf.Request{Path: "/req/error/github"})
	var serr *sheaf.Error
	if !errors.As(err, &serr) {
		t.Fatalf("err %#v", err)
	}
	if serr.HTTPStatus != 401 || !strings.Contains(serr.ServerMessage, "Bad credentials") || !strings.Contains(serr.Body, "Bad credentials") {
		t.Fatalf("error %#v", serr)
	}
	if response == nil || response.StatusCode != 401 {
		t.Fatalf("response %+v", response)
	}
}

func TestDoWithABody(t *testing.T) {
	client := fresh(t, sheaf.WithHeader("X-Client", "go"))
	body := []byte(`{"name":"widget","count":3}`)
	response, err := client.Do(context.Background(), sheaf.Request{
		Method: "POST", Path: "/req/echo", Segments: []string{"a/b c"},
		Query:  url.Values{"b": {"2"}, "a": {"1"}},
		Header: http.Header{"X-Test": {"yes"}},
		Body:   body, ContentType: "application/json",
	})
	if err != nil {
		t.Fatal(err)
	}
	var echo struct {
		Method  string              `json:"method"`
		Path    string              `json:"path"`
		Query   [][2]string         `json:"query"`
		Headers map[string][]string `json:"headers"`
		Body    string              `json:"body"`
		JSON    map[string]any      `json:"json"`
	}
	if err := json.Unmarshal(response.Body, &echo); err != nil {
		t.Fatalf("%v: %s", err, response.Body)
	}
	if response.StatusCode != 200 || echo.Method != "POST" || echo.Body != string(body) || echo.JSON["name"] != "widget" {
		t.Fatalf("echo %+v", echo)
	}
	if echo.Path != "/req/echo/a%2Fb%20c" || fmt.Sprint(echo.Query) != "[[a 1] [b 2]]" {
		t.Fatalf("path %q query %v", echo.Path, echo.Query)
	}
	if fmt.Sprint(echo.Headers["x-test"], echo.Headers["x-client"], echo.Headers["content-type"]) != "[yes] [go] [application/json]" {
		t.Fatalf("headers %v", echo.Headers)
	}
	if response.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("response headers %v", response.Header)
	}
}

func TestDoCancelledByContext(t *testing.T) {
	client := fresh(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := client.Do(ctx, sheaf.Request{Path: "/anchor?latency_ms=3000"})
	if !errors.Is(err, sheaf.CodeCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if time.Since(started) > 2*time.Second {
		t.Fatalf("took %v", time.Since(started))
	}
}

func TestDownload(t *testing.T) {
	client := fresh(t)
	file := filepath.Join(t.TempDir(), "sub", "data.bin")
	response, err := client.Download(context.Background(), "/req/download?size=200000", file)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 200000)
	for i := range want {
		want[i] = byte(i % 251)
	}
	if response.StatusCode != 200 || len(response.Body) != 0 || !bytes.Equal(data, want) {
		t.Fatalf("status %d, %d body bytes, file of %d bytes", response.StatusCode, len(response.Body), len(data))
	}
}

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, record slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, record.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, record := range r.records {
		fmt.Fprintf(&b, "%s %s", record.Level, record.Message)
		record.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		b.WriteString("\n")
	}
	return b.String()
}

func TestLogRecordsReachSlog(t *testing.T) {
	rec := &recorder{}
	client := fresh(t, sheaf.WithLogger(slog.New(rec)))
	if _, _, err := list(t, client, "/drf?n=30&page_size=10").FetchAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := client.Close(); err != nil { // hands over what is queued
		t.Fatal(err)
	}
	text := rec.text()
	requests := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "kind=request") && strings.Contains(line, "/drf") && strings.Contains(line, "http_status=200") {
			requests++
			if !strings.HasPrefix(line, "INFO ") || !strings.Contains(line, "method=GET") {
				t.Fatalf("record %q", line)
			}
		}
	}
	if requests != 3 || !strings.Contains(text, "kind=plan") {
		t.Fatalf("%d request records in:\n%s", requests, text)
	}
}

func TestEventsReachTheHandler(t *testing.T) {
	var mu sync.Mutex
	var events []sheaf.Event
	client := fresh(t, sheaf.WithRetries(2, 0, 0), sheaf.WithEventHandler(func(e sheaf.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	_, err := client.Do(context.Background(), sheaf.Request{Path: "/status?code=503"})
	if !errors.Is(err, sheaf.CodeHTTP) {
		t.Fatalf("err %v", err)
	}
	client.Close()
	mu.Lock()
	defer mu.Unlock()
	kinds := []string{}
	for _, e := range events {
		kinds = append(kinds, e.Kind.String())
	}
	if fmt.Sprint(kinds) != "[retrying server_unavailable]" || events[1].HTTPStatus != 503 || events[1].Attempt != 2 {
		t.Fatalf("events %+v", events)
	}
}

func TestCredentialsNeverInErrors(t *testing.T) {
	const token = "sheaf-go-secret-9c1f"
	rec := &recorder{}
	client := fresh(t, sheaf.WithBearerToken(token), sheaf.WithLogger(slog.New(rec)))
	_, _, err := list(t, client, "/anchor?n=30&per_page=10&bearer=another-one").FetchAll(context.Background())
	var serr *sheaf.Error
	if !errors.As(err, &serr) || serr.HTTPStatus != 401 {
		t.Fatalf("err %v", err)
	}
	stats, _ := server.Stats()
	if len(stats.Log) == 0 || stats.Log[0].Authorization == nil || *stats.Log[0].Authorization != "Bearer "+token {
		t.Fatalf("the token was not sent: %+v", stats.Log)
	}
	client.Close()
	for _, text := range []string{err.Error(), fmt.Sprintf("%+v", *serr), rec.text()} {
		if strings.Contains(text, token) {
			t.Fatalf("the token is in %q", text)
		}
	}

	const key = "sheaf-go-key-77aa"
	keyed := fresh(t, sheaf.WithAPIKeyQuery("api_key", key), sheaf.WithBasicAuth("user", "pass-word-5"))
	_, err = keyed.Do(context.Background(), sheaf.Request{Path: "/status?code=404"})
	if !errors.As(err, &serr) || serr.HTTPStatus != 404 {
		t.Fatalf("err %v", err)
	}
	if text := fmt.Sprintf("%v %+v", err, *serr); strings.Contains(text, key) || strings.Contains(text, "pass-word-5") {
		t.Fatalf("a secret is in %q", text)
	}
}

func TestRefusedOptionsAndClosedClient(t *testing.T) {
	if _, err := sheaf.NewClient("not a url"); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("err %v", err)
	}
	if _, err := sheaf.NewClient(server.URL, sheaf.WithWindow(0)); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("err %v", err)
	}
	if _, err := sheaf.NewClient(server.URL, sheaf.WithLogger(nil)); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("err %v", err)
	}
	client := fresh(t)
	if _, err := client.List("/anchor", sheaf.Description(`{"paging": {"kind": "sideways"}}`)); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("err %v", err)
	} else if !strings.Contains(err.Error(), "/paging/kind") {
		t.Fatalf("message %q", err)
	}
	if len(sheaf.Presets()) == 0 {
		t.Fatal("no presets")
	}
	client.Close()
	if _, err := client.List("/anchor"); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("err %v", err)
	}
	if _, err := client.Do(context.Background(), sheaf.Request{}); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("err %v", err)
	}
}

func TestCloseWhileARequestAndAListRun(t *testing.T) {
	client := fresh(t)
	l := list(t, client, "/drf?n=40&page_size=10&latency_ms=100")
	type answer struct {
		response *sheaf.Response
		err      error
	}
	answers := make(chan answer, 1)
	go func() {
		response, err := client.Do(context.Background(), sheaf.Request{Path: "/anchor?n=3&latency_ms=300"})
		answers <- answer{response, err}
	}()
	listed := make(chan error, 1)
	go func() {
		items, err := sheaf.FetchAllInto[item](context.Background(), l)
		if err == nil && len(items) != 40 {
			err = fmt.Errorf("%d items", len(items))
		}
		listed <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if a := <-answers; a.err != nil || a.response.StatusCode != 200 {
		t.Fatalf("the request after Close: %+v", a)
	}
	if err := <-listed; err != nil {
		t.Fatalf("the list after Close: %v", err)
	}
}

func TestClientSharedByGoroutines(t *testing.T) {
	client := fresh(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			l, err := client.List(fmt.Sprintf("/drf?n=%d&page_size=10", 50+g))
			if err != nil {
				errs <- err
				return
			}
			defer l.Close()
			items, err := sheaf.FetchAllInto[item](context.Background(), l)
			if err == nil && len(items) != 50+g {
				err = fmt.Errorf("%d items, want %d", len(items), 50+g)
			}
			errs <- err
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// requestsSettle fails unless the server's request count stays put after a stop, and returns it.
// A request sent just before the stop may reach the server's count a little later (on a loaded
// machine, tens of milliseconds): the count is read once those have had time to arrive; a run
// that went on would send a window every 50 ms.
func requestsSettle(t *testing.T) int {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	before, err := server.Stats()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	after, err := server.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if after.Requests != before.Requests {
		t.Fatalf("requests went on after the stop: %d, then %d", before.Requests, after.Requests)
	}
	return after.Requests
}
