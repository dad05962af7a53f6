package sheaf_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sheaf.dev/sheaf"
)

type charge struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
}

// served is the Stripe-shaped list at path walked one page at a time (split: null).
func served(t *testing.T, client *sheaf.Client, path string) []charge {
	t.Helper()
	items, err := sheaf.FetchAllInto[charge](context.Background(), list(t, client, path, sheaf.Preset("stripe"),
		sheaf.Description(`{"preset":"stripe","split":null}`)))
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func sameCharges(t *testing.T, got, want []charge) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d items, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("item %d is %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestACursorListWithARangeFilterIsReadInPiecesEachItemOnceInOrder(t *testing.T) {
	client := fresh(t)
	const path = "/range/stripe?n=4000&limit=100&burst=300:3&latency_ms=5"
	want := served(t, client, path)
	// The preset's split, and the same spelled in the description JSON.
	for _, opt := range []sheaf.ListOption{sheaf.Preset("stripe"), sheaf.Description(`{"paging":{"kind":"cursor","param":"starting_after"},"signals":{"items":{"source":"body","where":"/data"},` +
		`"cursor":{"source":"last_item","where":"/id"},"has_more":{"source":"body","where":"/has_more"}},` +
		`"split":{"field":"/created","lower":"created[gte]","upper":"created[lt]"}}`)} {
		l := list(t, client, path, opt)
		got, err := sheaf.FetchAllInto[charge](context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		sameCharges(t, got, want)
		text, err := l.Description()
		if err != nil {
			t.Fatal(err)
		}
		var described struct {
			Plan      string `json:"plan"`
			SplitPlan string `json:"split_plan"`
		}
		if err := json.Unmarshal([]byte(text), &described); err != nil || described.Plan != "split" ||
			!strings.HasPrefix(described.SplitPlan, "split on /created into ") {
			t.Fatalf("described as %s (%v)", text, err)
		}
	}
}
