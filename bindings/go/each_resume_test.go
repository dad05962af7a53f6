package sheaf_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"sheaf.dev/sheaf"
)

// eachUntil runs Each over path (resumed from token, when given) and stops it after stopAfter
// items (0: runs to the end): by fn's error, or by cancelling the context inside fn. It returns
// the items fn was given and how the run ended.
func eachUntil(t *testing.T, client *sheaf.Client, path, token string, stopAfter int, byCancel bool,
	opts ...sheaf.ListOption) ([]item, sheaf.Result, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := errors.New("stop here")
	l := list(t, client, path, append([]sheaf.ListOption{sheaf.Resume(token)}, opts...)...)
	var got []item
	err := l.Each(ctx, func(raw json.RawMessage) error {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			return err
		}
		got = append(got, it)
		if len(got) == stopAfter {
			if byCancel {
				cancel()
				return nil
			}
			return stop
		}
		return nil
	})
	if stopAfter > 0 && len(got) == stopAfter {
		if byCancel && !errors.Is(err, context.Canceled) || !byCancel && !errors.Is(err, stop) {
			t.Fatalf("stopped after %d items: err %v", stopAfter, err)
		}
		if r := l.Result(); r.StopReason != sheaf.StopFailed || r.ResumeToken == "" {
			t.Fatalf("stopped after %d items: result %+v", stopAfter, r)
		}
	} else if err != nil {
		t.Fatalf("after %d items: %v", len(got), err)
	}
	return got, l.Result(), err
}

// An Each stopped inside a snapshot (a page holds 10 items; 15 and 23 fall inside one) leaves a
// token that goes on after the last item fn was given: the resumed run gives every other item,
// none twice, none missed (issue 47).
func TestEachResumesAfterTheLastItemGiven(t *testing.T) {
	const path = "/anchor?n=95&per_page=10"
	for _, tc := range []struct {
		name     string
		byCancel bool
		stops    []int // where each run stops, in items of that run; the last run goes to the end
	}{
		{"fn's error after 15", false, []int{15}},
		{"the context cancelled after 23", true, []int{23}},
		{"stopped again inside the same page", false, []int{15, 2}},
		{"stopped again on a later page", true, []int{7, 21, 1}},
		{"stopped after the first item", false, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fresh(t)
			var all []item
			token := ""
			for _, stopAfter := range tc.stops {
				got, r, _ := eachUntil(t, client, path, token, stopAfter, tc.byCancel)
				if len(got) != stopAfter {
					t.Fatalf("run stopping at %d gave %d items", stopAfter, len(got))
				}
				if r.Items != int64(stopAfter) {
					t.Errorf("run stopping at %d: Result.Items %d", stopAfter, r.Items)
				}
				all, token = append(all, got...), r.ResumeToken
			}
			rest, r, _ := eachUntil(t, client, path, token, 0, false)
			checkIDs(t, append(all, rest...), 0, 95)
			if r.StopReason != sheaf.StopComplete || r.ResumeToken != "" || r.Items != int64(len(rest)) {
				t.Fatalf("the last run: %+v", r)
			}
		})
	}
}

// The token of an Each stopped inside a snapshot resumes FetchAll and FetchAllInto exactly too,
// and an item limit on the resumed list counts the items it delivers, not those it passes over.
func TestAnEachTokenResumesFetchAllAndBudgets(t *testing.T) {
	const path = "/anchor?n=95&per_page=10"
	client := fresh(t)
	first, r, _ := eachUntil(t, client, path, "", 15, false)
	token := r.ResumeToken

	raw, result, err := list(t, client, path, sheaf.Resume(token)).FetchAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rest := make([]item, len(raw))
	for i := range raw {
		if err := json.Unmarshal(raw[i], &rest[i]); err != nil {
			t.Fatal(err)
		}
	}
	checkIDs(t, append(append([]item(nil), first...), rest...), 0, 95)
	if result.StopReason != sheaf.StopComplete || result.Items != 80 {
		t.Fatalf("FetchAll's result %+v", result)
	}

	into, err := sheaf.FetchAllInto[item](context.Background(), list(t, client, path, sheaf.Resume(token)))
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, into, 15, 95)

	// MaxItems before or after Resume: 10 items from item 15, then a token that goes on at 25.
	for _, opts := range [][]sheaf.ListOption{
		{sheaf.MaxItems(10), sheaf.Resume(token)},
		{sheaf.Resume(token), sheaf.MaxItems(10)},
	} {
		limited := list(t, client, path, opts...)
		some, err := sheaf.FetchAllInto[item](context.Background(), limited)
		if err != nil {
			t.Fatal(err)
		}
		checkIDs(t, some, 15, 25)
		lr := limited.Result()
		if lr.StopReason != sheaf.StopItemLimit || lr.Items != 10 {
			t.Fatalf("the limited run: %+v", lr)
		}
		after, err := sheaf.FetchAllInto[item](context.Background(), list(t, client, path, sheaf.Resume(lr.ResumeToken)))
		if err != nil {
			t.Fatal(err)
		}
		checkIDs(t, after, 25, 95)
	}
}

// A run stopped while it still passes over the items an earlier Each was given (here by a page
// budget that ends before them) leaves a token that passes over the rest of them.
func TestAStopWhilePassingOverKeepsPassingOver(t *testing.T) {
	const path = "/anchor?n=95&per_page=10"
	client := fresh(t)
	at10 := list(t, client, path, sheaf.MaxItems(10))
	if _, err := sheaf.FetchAllInto[item](context.Background(), at10); err != nil {
		t.Fatal(err)
	}
	// What an Each stopped after item 34 of a snapshot that began at item 10 leaves.
	token := "sheaf-go-resume-1.25." + at10.Result().ResumeToken
	short := list(t, client, path, sheaf.Resume(token), sheaf.PageBudget(2))
	none, err := sheaf.FetchAllInto[item](context.Background(), short)
	if err != nil || len(none) != 0 {
		t.Fatalf("%d items, err %v", len(none), err)
	}
	r := short.Result()
	if r.StopReason != sheaf.StopPageBudget || r.Items != 0 || !strings.HasPrefix(r.ResumeToken, "sheaf-go-resume-1.5.") {
		t.Fatalf("result %+v", r)
	}
	rest, err := sheaf.FetchAllInto[item](context.Background(), list(t, client, path, sheaf.Resume(r.ResumeToken)))
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, rest, 35, 95)
}

// A group's lists take the library's tokens: this package's form is refused there, not misread.
func TestAGroupRefusesAnEachToken(t *testing.T) {
	client := fresh(t)
	_, r, _ := eachUntil(t, client, "/anchor?n=95&per_page=10", "", 15, false)
	_, err := client.Many([]string{"/anchor?n=95&per_page=10"}, sheaf.ResumeTokens(r.ResumeToken))
	if !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("err %v", err)
	}
}

// A token this package made for a stop inside a snapshot is refused, not misread, by a list it
// was not made for and when it is damaged.
func TestAnEachTokenIsCheckedLikeALibraryToken(t *testing.T) {
	client := fresh(t)
	_, r, _ := eachUntil(t, client, "/anchor?n=95&per_page=10", "", 15, false)
	for _, token := range []string{r.ResumeToken + "x", r.ResumeToken[:len(r.ResumeToken)/2]} {
		if _, err := client.List("/anchor?n=95&per_page=10", sheaf.Resume(token)); !errors.Is(err, sheaf.CodeInvalidArgument) {
			t.Fatalf("a damaged token: %v", err)
		}
	}
	other := list(t, client, "/drf?n=95&page_size=10", sheaf.Resume(r.ResumeToken))
	if _, _, err := other.FetchAll(context.Background()); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("another list's token: %v", err)
	}
}
