package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"sheaf.dev/sheaf/internal/testserver"
)

var upstream *testserver.Server

func TestMain(m *testing.M) {
	var err error
	upstream, err = testserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		os.Exit(1)
	}
	code := m.Run()
	upstream.Close()
	os.Exit(code)
}

// walk fetches the upstream's whole list with net/http alone, following its "next" links: the
// item set the service must answer with.
func walk(t *testing.T, url string) []json.RawMessage {
	t.Helper()
	var all []json.RawMessage
	for url != "" {
		response, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Next    *string           `json:"next"`
			Results []json.RawMessage `json:"results"`
		}
		err = json.NewDecoder(response.Body).Decode(&page)
		response.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Results...)
		url = ""
		if page.Next != nil {
			url = *page.Next
		}
	}
	return all
}

func serve(t *testing.T, path string) *httptest.Server {
	t.Helper()
	service, err := NewService(upstream.URL+path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { service.Close() })
	front := httptest.NewServer(service)
	t.Cleanup(front.Close)
	return front
}

func TestItemsIsTheWholeUpstreamList(t *testing.T) {
	const path = "/drf?n=1234&page_size=25"
	want := walk(t, upstream.URL+path)
	if len(want) != 1234 {
		t.Fatalf("the upstream walk found %d items", len(want))
	}
	front := serve(t, path)
	response, err := http.Get(front.URL + "/items")
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	var got []json.RawMessage
	if err := json.NewDecoder(response.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if response.StatusCode != 200 || response.Header.Get("Content-Type") != "application/json" || len(got) != len(want) {
		t.Fatalf("status %d, %d items, want %d", response.StatusCode, len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Fatalf("item %d is %s, want %s", i, got[i], want[i])
		}
	}
	if response.Header.Get("X-Upstream-Pages") != "50" {
		t.Fatalf("pages %q", response.Header.Get("X-Upstream-Pages"))
	}
}

func TestUpstreamFailureIsABadGateway(t *testing.T) {
	front := serve(t, "/drf?n=100&page_size=10&fail=4:9:404")
	response, err := http.Get(front.URL + "/items")
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	var body map[string]string
	_ = json.NewDecoder(response.Body).Decode(&body)
	if response.StatusCode != http.StatusBadGateway || body["error"] == "" {
		t.Fatalf("status %d, body %v", response.StatusCode, body)
	}
}

func TestOnlyGetItems(t *testing.T) {
	front := serve(t, "/drf?n=10")
	response, err := http.Post(front.URL+"/items", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	response.Body.Close()
	if response.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", response.StatusCode)
	}
	response, err = http.Get(front.URL + "/other")
	if err != nil {
		t.Fatal(err)
	}
	response.Body.Close()
	if response.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /other: %d", response.StatusCode)
	}
}

func TestUpstreamMustBeAbsolute(t *testing.T) {
	if _, err := NewService("/drf", slog.Default()); err == nil {
		t.Fatal("a relative upstream was taken")
	}
}
