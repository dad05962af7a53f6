package sheaf_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"sheaf.dev/sheaf"
)

type issue struct {
	ID         int    `json:"id"`
	Number     int    `json:"number"`
	Title      string `json:"title"`
	Repository string `json:"repository"`
	UpdatedAt  string `json:"updated_at"`
}

// orgIssues is every issue of the org's first `repos` repositories, as the server says, by id.
func orgIssues(t *testing.T, org string, repos int) map[int]issue {
	t.Helper()
	var answer struct {
		Count  int     `json:"count"`
		Issues []issue `json:"issues"`
	}
	if err := server.GetJSON(fmt.Sprintf("/_orgs/%s/issues?repos=%d", org, repos), &answer); err != nil {
		t.Fatal(err)
	}
	byID := map[int]issue{}
	for _, is := range answer.Issues {
		byID[is.ID] = is
	}
	if len(byID) != answer.Count || answer.Count == 0 {
		t.Fatalf("the server lists %d issues, %d distinct", answer.Count, len(byID))
	}
	return byID
}

// freshOrg forgets what earlier tests did to org and sets its options (a query, or "").
func freshOrg(t *testing.T, org, options string) {
	t.Helper()
	if err := server.Post("/_orgs/" + org + "/reset"); err != nil {
		t.Fatal(err)
	}
	if options != "" {
		if err := server.Post("/_orgs/" + org + "/options?" + options); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = server.Post("/_orgs/" + org + "/reset") })
	}
}

func TestFetchEachGivesEveryRepositorysIssues(t *testing.T) {
	const org, repos = "go-fanout", 40
	freshOrg(t, org, "")
	client := fresh(t)
	result, err := client.FetchEach(context.Background(), fmt.Sprintf("/orgs/%s/repos?repos=%d", org, repos),
		[]string{"/repos/{/full_name}/issues"})
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Lists) != repos+1 || !result.Lists[0].Parent || result.Lists[0].Items != nil || len(result.Failed()) != 0 {
		t.Fatalf("%d lists, the first %+v, %d failed", len(result.Lists), result.Lists[0], len(result.Failed()))
	}
	want := orgIssues(t, org, repos)
	got := map[int]issue{}
	seen := map[string]bool{}
	for _, child := range result.Lists[1:] {
		if child.URL != server.URL+"/repos/"+child.Tag+"/issues" ||
			!strings.HasPrefix(child.Tag, org+"/repo-") || len(child.Tag) != len(org)+9 || child.Parent {
			t.Fatalf("child %d: tag %q, URL %q", child.Index, child.Tag, child.URL)
		}
		if seen[child.Tag] || child.Err != nil || child.Result.StopReason != sheaf.StopComplete {
			t.Fatalf("child %d (%s): err %v, result %+v, seen before %v", child.Index, child.Tag, child.Err, child.Result, seen[child.Tag])
		}
		seen[child.Tag] = true
		for _, raw := range child.Items {
			var is issue
			if err := json.Unmarshal(raw, &is); err != nil {
				t.Fatal(err)
			}
			if _, twice := got[is.ID]; twice || is.Repository != child.Tag {
				t.Fatalf("issue %+v in %s (twice: %v)", is, child.Tag, twice)
			}
			got[is.ID] = is
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%d issues fetched, the server has %d", len(got), len(want))
	}
}

func TestAFailedListLeavesTheOthersWhole(t *testing.T) {
	client := fresh(t)
	paths := []string{"/anchor?n=50&per_page=10", "/repos/go-partial/nothing/issues", "/drf?n=30&page_size=10"}
	result, err := client.FetchMany(context.Background(), paths, sheaf.Tags("anchor", "", "drf"))
	var serr *sheaf.Error
	if !errors.As(err, &serr) || serr.Code != sheaf.CodePartial || !errors.Is(err, sheaf.CodePartial) {
		t.Fatalf("err %v", err)
	}
	if result == nil || len(result.Lists) != 3 || result.Err != err {
		t.Fatalf("result %+v", result)
	}
	failed := result.Failed()
	if len(failed) != 1 || failed[0].Index != 1 || failed[0].Tag != paths[1] || !errors.As(failed[0].Err, &serr) || serr.HTTPStatus != 404 {
		t.Fatalf("failed %+v", failed)
	}
	for _, whole := range []struct {
		index int
		tag   string
		n     int
	}{{0, "anchor", 50}, {2, "drf", 30}} {
		outcome := result.Lists[whole.index]
		items := make([]item, len(outcome.Items))
		for i, raw := range outcome.Items {
			if err := json.Unmarshal(raw, &items[i]); err != nil {
				t.Fatal(err)
			}
		}
		if outcome.Err != nil || outcome.Tag != whole.tag || outcome.Result.StopReason != sheaf.StopComplete ||
			!strings.HasPrefix(outcome.URL, server.URL+paths[whole.index][:5]) {
			t.Fatalf("list %d: %+v", whole.index, outcome)
		}
		checkIDs(t, items, 0, whole.n)
	}
}

func TestGroupOptionsShapeTheRun(t *testing.T) {
	ctx := context.Background()
	client := fresh(t)
	// Fail-fast: the 404 ends the group with its own error and cuts the long list short.
	result, err := client.FetchMany(ctx, []string{"/anchor?n=3000&per_page=10&latency_ms=20", "/status?code=404"}, sheaf.FailFast(true))
	if !errors.Is(err, sheaf.CodeHTTP) || result == nil || result.Lists[0].Err == nil || len(result.Lists[0].Items) == 3000 {
		t.Fatalf("fail-fast: err %v, result %+v", err, result)
	}
	// Missing values: every third repository has no full_name; skipped by default, failing the
	// parent when asked.
	const org = "go-missing"
	freshOrg(t, org, "")
	parent := "/orgs/" + org + "/repos?repos=9&missing=3"
	templates := []string{"/repos/{/full_name}/issues"}
	skipped, err := client.FetchEach(ctx, parent, templates)
	if err != nil || len(skipped.Lists) != 1+6 {
		t.Fatalf("skipping: err %v, %d lists", err, len(skipped.Lists))
	}
	failed, err := client.FetchEach(ctx, parent, templates, sheaf.MissingValues(sheaf.MissingFail))
	if !errors.Is(err, sheaf.CodePartial) || failed.Lists[0].Err == nil || !failed.Lists[0].Parent {
		t.Fatalf("failing: err %v, parent %+v", err, failed.Lists[0])
	}
	// Ordered: the children's deltas come list after list, in the parent's item order (the
	// parent's one delta comes when it ends, among them).
	group, err := client.Fanout("/orgs/"+org+"/repos?repos=30", templates, sheaf.Ordered(true))
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	last, deltas := -1, 0
	err = group.Each(ctx, func(d sheaf.GroupDelta) error {
		if d.Parent {
			return nil
		}
		if d.Index < last {
			return fmt.Errorf("a delta of list %d after one of list %d", d.Index, last)
		}
		last, deltas = d.Index, deltas+1
		return nil
	})
	if err != nil || last != 30 || deltas < 30 {
		t.Fatalf("ordered: err %v, last list %d, %d deltas", err, last, deltas)
	}
}

func TestAStreamLeftEarlyStopsTheFetching(t *testing.T) {
	const org = "go-stream"
	freshOrg(t, org, "latency_ms=30")
	client := fresh(t, sheaf.WithWindow(4), sheaf.WithAdaptiveWindow(false, 0))
	group, err := client.Fanout("/orgs/"+org+"/repos?repos=200", []string{"/repos/{/full_name}/issues"})
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	enough := errors.New("enough")
	deltas := 0
	err = group.Each(context.Background(), func(d sheaf.GroupDelta) error {
		deltas++
		if len(d.Items) > 0 {
			return enough
		}
		return nil
	})
	if !errors.Is(err, enough) {
		t.Fatalf("err %v after %d deltas", err, deltas)
	}
	result := group.Result()
	if result == nil || len(result.Failed()) == 0 || !errors.Is(result.Failed()[0].Err, sheaf.CodeCancelled) {
		t.Fatalf("result %+v", result)
	}
	requestsSettle(t)
	if stats, _ := server.Stats(); stats.Requests > 200 { // the whole org takes over 1000
		t.Fatalf("%d requests for a stream left at its first items", stats.Requests)
	}
	if err := group.Each(context.Background(), func(sheaf.GroupDelta) error { return nil }); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("a second run: %v", err)
	}
}

func TestAListCutShortResumesFromItsToken(t *testing.T) {
	const path = "/anchor?n=300&per_page=10&latency_ms=10"
	client := fresh(t, sheaf.WithWindow(2), sheaf.WithAdaptiveWindow(false, 0))
	group, err := client.Many([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	var got []item
	enough := errors.New("enough")
	err = group.Each(context.Background(), func(d sheaf.GroupDelta) error {
		for _, raw := range d.Items {
			var it item
			if err := json.Unmarshal(raw, &it); err != nil {
				return err
			}
			got = append(got, it)
		}
		if len(got) >= 50 {
			return enough
		}
		return nil
	})
	cut := group.Result().Lists[0]
	if !errors.Is(err, enough) || !errors.Is(cut.Err, sheaf.CodeCancelled) || cut.Result.ResumeToken == "" ||
		cut.Result.Items != int64(len(got)) {
		t.Fatalf("err %v, outcome %+v after %d items", err, cut, len(got))
	}
	rest, err := client.FetchMany(context.Background(), []string{cut.URL}, sheaf.ResumeTokens(cut.Result.ResumeToken))
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range rest.Lists[0].Items {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		got = append(got, it)
	}
	checkIDs(t, got, 0, 300)
}

func TestAContextEndStopsAGroup(t *testing.T) {
	const org = "go-deadline"
	freshOrg(t, org, "latency_ms=30")
	client := fresh(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	started := time.Now()
	result, err := client.FetchEach(ctx, "/orgs/"+org+"/repos?repos=300", []string{"/repos/{/full_name}/issues"})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, sheaf.CodeCancelled) {
		t.Fatalf("err %v", err)
	}
	if time.Since(started) > 5*time.Second || result == nil || len(result.Failed()) == 0 {
		t.Fatalf("took %v, result %+v", time.Since(started), result)
	}
	requestsSettle(t)
}

func TestCloseEndsTheClientsGroups(t *testing.T) {
	const org = "go-close"
	freshOrg(t, org, "latency_ms=30")
	client := fresh(t)
	unstarted, err := client.Many([]string{"/anchor?n=10"})
	if err != nil {
		t.Fatal(err)
	}
	running, err := client.Fanout("/orgs/"+org+"/repos?repos=300", []string{"/repos/{/full_name}/issues"})
	if err != nil {
		t.Fatal(err)
	}
	firstDelta := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		once := false
		ran <- running.Each(context.Background(), func(sheaf.GroupDelta) error {
			if !once {
				once = true
				close(firstDelta)
			}
			return nil
		})
	}()
	select {
	case <-firstDelta:
	case <-time.After(10 * time.Second):
		t.Fatal("no delta within 10 s")
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if running.Result() == nil { // the run sets it before it frees the group, which Close waits for
		t.Fatal("Close returned before the running group ended")
	}
	select {
	case err := <-ran:
		if !errors.Is(err, sheaf.CodeCancelled) {
			t.Fatalf("the running group: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running group's Each did not return")
	}
	if _, err := unstarted.FetchAll(context.Background()); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("the group Close freed: %v", err)
	}
	requestsSettle(t)
}

func TestGroupMisuseIsAnError(t *testing.T) {
	ctx := context.Background()
	client := fresh(t)
	var none *sheaf.Client
	if _, err := none.FetchMany(ctx, []string{"/anchor"}); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("a nil client ran a group: %v", err)
	}
	if _, err := none.FetchEach(ctx, "/orgs/x/repos", []string{"/r/{/id}"}); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("a nil client ran a fan-out: %v", err)
	}
	if err := none.Close(); err != nil {
		t.Fatalf("closing a nil client: %v", err)
	}
	var group *sheaf.Group
	if _, err := group.FetchAll(ctx); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("a nil group: %v", err)
	}
	group.Cancel()
	group.Close()
	for name, try := range map[string]func() error{
		"no template": func() error { _, err := client.FetchEach(ctx, "/orgs/x/repos", nil); return err },
		"a bad template": func() error {
			_, err := client.FetchEach(ctx, "/orgs/x/repos", []string{"/repos/{/full_name"})
			return err
		},
		"tags for a fan-out": func() error {
			_, err := client.Fanout("/orgs/x/repos", []string{"/r/{/id}"}, sheaf.Tags("a"))
			return err
		},
		"too few tags":        func() error { _, err := client.Many([]string{"/a", "/b"}, sheaf.Tags("a")); return err },
		"too few tokens":      func() error { _, err := client.Many([]string{"/a", "/b"}, sheaf.ResumeTokens("")); return err },
		"children of Many":    func() error { _, err := client.Many([]string{"/a"}, sheaf.ChildOptions()); return err },
		"a nil option":        func() error { _, err := client.Many([]string{"/a"}, nil); return err },
		"an unknown missing":  func() error { _, err := client.Many([]string{"/a"}, sheaf.MissingValues(7)); return err },
		"a refused list":      func() error { _, err := client.Many([]string{"/a"}, sheaf.ListOptions(sheaf.MaxItems(-1))); return err },
		"a nil Each function": func() error { g, _ := client.Many([]string{"/a"}); defer g.Close(); return g.Each(ctx, nil) },
	} {
		if err := try(); !errors.Is(err, sheaf.CodeInvalidArgument) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	empty, err := client.FetchMany(ctx, nil)
	if err != nil || len(empty.Lists) != 0 {
		t.Fatalf("no lists: %+v, %v", empty, err)
	}
	client.Close()
	if _, err := client.FetchMany(ctx, []string{"/anchor"}); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("a closed client: %v", err)
	}
	if _, err := client.FetchEach(ctx, "/orgs/x/repos", []string{"/r/{/id}"}); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("a closed client: %v", err)
	}
	if stats, _ := server.Stats(); stats.Requests != 0 {
		t.Fatalf("%d requests", stats.Requests)
	}
}
