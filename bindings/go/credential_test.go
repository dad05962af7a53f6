package sheaf_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"sheaf.dev/sheaf"
)

// provider is a token provider that gives stale first and fresh when asked to refresh, and
// records how it was asked.
type provider struct {
	mu     sync.Mutex
	asked  []bool // each call's refresh
	stale  string
	fresh  string
	failOn int // the call (from 1) that fails instead, 0: none
	panics bool
}

func (p *provider) provide(refresh bool) (string, error) {
	p.mu.Lock()
	p.asked = append(p.asked, refresh)
	call := len(p.asked)
	p.mu.Unlock()
	if p.failOn == call {
		if p.panics {
			panic("the provider broke")
		}
		return "", errors.New("the token service is down")
	}
	if refresh {
		return p.fresh, nil
	}
	return p.stale, nil
}

func (p *provider) calls() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bool(nil), p.asked...)
}

func sameCalls(got []bool, want ...bool) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// The server refuses the first token with 401 (bearer=: only "Bearer fresh-token" passes): the
// client asks the provider again with refresh, sends the request again with the new token, and the
// list arrives whole (issue 47).
func TestATokenProviderRefreshesAfterA401(t *testing.T) {
	p := &provider{stale: "stale-token", fresh: "fresh-token"}
	client := fresh(t, sheaf.WithTokenProvider(p.provide))
	items, err := sheaf.FetchAllInto[item](context.Background(), list(t, client, "/anchor?n=30&per_page=10&bearer=fresh-token"))
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, items, 0, 30)
	if calls := p.calls(); !sameCalls(calls, false, true) {
		t.Fatalf("the provider was asked %v, want [false true]", calls)
	}
	stats, err := server.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, entry := range stats.Log {
		if entry.Authorization != nil {
			sent = append(sent, *entry.Authorization)
		}
	}
	if len(sent) != 4 || sent[0] != "Bearer stale-token" || sent[1] != "Bearer fresh-token" {
		t.Fatalf("the server saw %q", sent)
	}

	// A single request asks the same provider: the fresh token is kept, not asked for again.
	response, err := client.Do(context.Background(), sheaf.Request{Path: "/anchor?n=3&bearer=fresh-token"})
	if err != nil || response.StatusCode != 200 {
		t.Fatalf("response %+v, err %v", response, err)
	}
	if calls := p.calls(); !sameCalls(calls, false, true) {
		t.Fatalf("the provider was asked %v after the request", calls)
	}
}

// A token that expires in the middle of a list (bearer_from=3: pages 3 on need the fresh token)
// is refreshed once for the pages refused together.
func TestATokenExpiringMidListIsRefreshedOnce(t *testing.T) {
	p := &provider{stale: "stale-token", fresh: "fresh-token"}
	client := fresh(t, sheaf.WithTokenProvider(p.provide), sheaf.WithWindow(4), sheaf.WithAdaptiveWindow(false, 0))
	items, _, err := list(t, client, "/anchor?n=100&per_page=10&bearer=fresh-token&bearer_from=3").FetchAll(context.Background())
	if err != nil || len(items) != 100 {
		t.Fatalf("%d items, err %v", len(items), err)
	}
	if calls := p.calls(); !sameCalls(calls, false, true) {
		t.Fatalf("the provider was asked %v, want [false true]", calls)
	}
}

// A provider that fails, panics or gives a token the server refuses again ends the list with an
// error, never the process; its message says what the provider said.
func TestATokenProviderThatFailsIsAnError(t *testing.T) {
	const path = "/anchor?n=30&per_page=10&bearer=fresh-token"
	t.Run("an error", func(t *testing.T) {
		p := &provider{stale: "stale-token", fresh: "fresh-token", failOn: 1}
		_, _, err := list(t, fresh(t, sheaf.WithTokenProvider(p.provide)), path).FetchAll(context.Background())
		var serr *sheaf.Error
		if !errors.As(err, &serr) || serr.Code != sheaf.CodeCredential || !strings.Contains(serr.Message, "the token service is down") {
			t.Fatalf("err %#v", err)
		}
	})
	t.Run("a panic", func(t *testing.T) {
		p := &provider{stale: "stale-token", fresh: "fresh-token", failOn: 2, panics: true}
		_, _, err := list(t, fresh(t, sheaf.WithTokenProvider(p.provide)), path).FetchAll(context.Background())
		var serr *sheaf.Error
		if !errors.As(err, &serr) || serr.Code != sheaf.CodeCredential || !strings.Contains(serr.Message, "panicked") {
			t.Fatalf("err %#v", err)
		}
		if calls := p.calls(); !sameCalls(calls, false, true) {
			t.Fatalf("the provider was asked %v", calls)
		}
	})
	t.Run("an empty token", func(t *testing.T) {
		_, _, err := list(t, fresh(t, sheaf.WithTokenProvider(func(bool) (string, error) { return "", nil })), path).
			FetchAll(context.Background())
		if !errors.Is(err, sheaf.CodeCredential) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("refused again", func(t *testing.T) {
		p := &provider{stale: "stale-token", fresh: "still-wrong"}
		_, _, err := list(t, fresh(t, sheaf.WithTokenProvider(p.provide)), path).FetchAll(context.Background())
		var serr *sheaf.Error
		if !errors.As(err, &serr) || serr.Code != sheaf.CodeHTTP || serr.HTTPStatus != 401 {
			t.Fatalf("err %#v", err)
		}
		if strings.Contains(serr.Error(), "still-wrong") || strings.Contains(serr.Error(), "stale-token") {
			t.Fatalf("a token in the error: %v", serr)
		}
		if calls := p.calls(); !sameCalls(calls, false, true) {
			t.Fatalf("the provider was asked %v: one refresh per refusal", calls)
		}
	})
	if _, err := sheaf.NewClient(server.URL, sheaf.WithTokenProvider(nil)); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("a nil provider: %v", err)
	}
}
