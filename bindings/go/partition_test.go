package sheaf_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"sheaf.dev/sheaf"
)

// runPartition runs p, read back from its text, on a client of its own, and decodes its items.
func runPartition(t *testing.T, p sheaf.Partition, opts ...sheaf.Option) []item {
	t.Helper()
	text, err := p.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var again sheaf.Partition
	if err := again.UnmarshalText(text); err != nil {
		t.Fatal(err)
	}
	client, err := sheaf.NewClient(server.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	raw, result, err := client.FetchPartition(context.Background(), again)
	if err != nil {
		t.Fatalf("partition %d: %v", p.Index(), err)
	}
	if result.StopReason != sheaf.StopComplete {
		t.Fatalf("partition %d: result %+v", p.Index(), result)
	}
	items := make([]item, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &items[i]); err != nil {
			t.Fatal(err)
		}
	}
	if p.ItemsExpected() >= 0 && int64(len(items)) != p.ItemsExpected() {
		t.Fatalf("partition %d: %d items, %d expected", p.Index(), len(items), p.ItemsExpected())
	}
	return items
}

func TestTheWindowIsSharedAmongThePartitionsThatRunAtOnce(t *testing.T) {
	client := fresh(t, sheaf.WithAdaptiveWindow(true, 48))
	ctx := context.Background()
	for _, c := range []struct{ atOnce, window int }{{8, 6}, {2, 24}, {3, 16}, {100, 6}} {
		partitions, err := list(t, client, "/anchor?n=400&per_page=20").PartitionsAtOnce(ctx, 8, c.atOnce)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range partitions {
			if p.Window() != c.window {
				t.Fatalf("at once %d: window %d, want %d: %s", c.atOnce, p.Window(), c.window, p)
			}
		}
	}
	if _, err := list(t, client, "/anchor?n=400&per_page=20").PartitionsAtOnce(ctx, 8, 0); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("at once 0: %v, want CodeInvalidArgument", err)
	}
}

func TestPartitionsCoverTheListOnceInOrder(t *testing.T) {
	client := fresh(t)
	partitions, err := list(t, client, "/anchor?n=5000&per_page=100").Partitions(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(partitions) != 4 {
		t.Fatalf("%d partitions, want 4", len(partitions))
	}
	var next int64
	for i, p := range partitions {
		if p.Index() != i || p.Count() != 4 || p.FirstPage() != next || p.Pages() < 1 || p.Why() != "" ||
			p.OpenEnded() != (i == 3) || p.PageSize() != 100 || !strings.HasPrefix(p.URL(), server.URL+"/anchor") {
			t.Fatalf("partition %d: %s", i, p)
		}
		next += p.Pages()
	}
	if next != 50 {
		t.Fatalf("the partitions plan %d pages, want 50", next)
	}
	var all []item
	for _, p := range partitions {
		all = append(all, runPartition(t, p)...)
	}
	checkIDs(t, all, 0, 5000)
}

func TestACursorListIsOnePartitionSayingWhy(t *testing.T) {
	client := fresh(t)
	partitions, err := list(t, client, "/conv/drf-cursor?n=237").Partitions(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(partitions) != 1 {
		t.Fatalf("%d partitions, want 1", len(partitions))
	}
	p := partitions[0]
	if !strings.Contains(p.Why(), "cursor") || !p.OpenEnded() || p.Count() != 1 || p.Index() != 0 {
		t.Fatalf("partition %s", p)
	}
	items := runPartition(t, p)
	if len(items) != 237 || items[0].ID != 0 || items[236].ID != 236 {
		t.Fatalf("%d items: %v ... ", len(items), items[:1])
	}
}

func TestNoSecretIsInAPartition(t *testing.T) {
	const token, secret = "sheaf-go-partition-token-31d", "sheaf-go-partition-sig-8e0"
	client := fresh(t, sheaf.WithBearerToken(token), sheaf.WithSecretParam("sig"))
	partitions, err := list(t, client, "/anchor?n=1000&per_page=100&sig="+secret).Partitions(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	stats, _ := server.Stats()
	if len(stats.Log) == 0 || stats.Log[0].Authorization == nil || *stats.Log[0].Authorization != "Bearer "+token ||
		!strings.Contains(stats.Log[0].Path, secret) {
		t.Fatalf("the plan did not send the token and the secret: %+v", stats.Log)
	}
	whole, err := json.Marshal(partitions)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{string(whole)}
	for _, p := range partitions {
		text, err := p.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, p.String(), string(text), p.URL())
	}
	if len(partitions) != 3 {
		t.Fatalf("%d partitions", len(partitions))
	}
	for _, text := range texts {
		if strings.Contains(text, token) || strings.Contains(text, secret) {
			t.Fatalf("a secret is in %q", text)
		}
	}
	// The JSON form reads back as the same partitions (encoding/json escapes "&" in strings: the
	// text may differ, the JSON does not).
	var again []sheaf.Partition
	if err := json.Unmarshal(whole, &again); err != nil {
		t.Fatal(err)
	}
	if len(again) != len(partitions) {
		t.Fatalf("%d partitions read back, %d written", len(again), len(partitions))
	}
	for i := range again {
		var read, written any
		_ = json.Unmarshal([]byte(again[i].String()), &read)
		_ = json.Unmarshal([]byte(partitions[i].String()), &written)
		if !reflect.DeepEqual(read, written) || again[i].FirstPage() != partitions[i].FirstPage() {
			t.Fatalf("partition %d read back as %s, not %s", i, again[i], partitions[i])
		}
	}
}

func TestPartitionMisuseIsAnError(t *testing.T) {
	client := fresh(t)
	ctx := context.Background()
	var none *sheaf.List
	if _, err := none.Partitions(ctx, 2); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("a nil list: %v", err)
	}
	for _, n := range []int{0, -3} {
		if _, err := list(t, client, "/anchor?n=10").Partitions(ctx, n); !errors.Is(err, sheaf.CodeInvalidArgument) {
			t.Fatalf("n = %d: %v", n, err)
		}
	}
	ran := list(t, client, "/anchor?n=10")
	if _, _, err := ran.FetchAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ran.Partitions(ctx, 2); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("a list that ran: %v", err)
	}
	for _, text := range []string{"", "{}", "[1]", "null", `{"index": 0}`} {
		if _, err := sheaf.ParsePartition(text); !errors.Is(err, sheaf.CodeInvalidArgument) {
			t.Fatalf("ParsePartition(%q): %v", text, err)
		}
	}
	if _, err := client.List("/anchor", sheaf.WithPartition(sheaf.Partition{})); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("the zero partition: %v", err)
	}
	partitions, err := list(t, client, "/anchor?n=100&per_page=10").Partitions(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(partitions[1].String()), &fields); err != nil {
		t.Fatal(err)
	}
	fields["first_page"] = "x"
	text, _ := json.Marshal(fields)
	bad, err := sheaf.ParsePartition(string(text))
	if err != nil || bad.FirstPage() != 0 || bad.Index() != 1 {
		t.Fatalf("a partition with a field of the wrong type reads as %s: %v", bad, err)
	}
	if _, _, err := client.FetchPartition(ctx, bad); !errors.Is(err, sheaf.CodeInvalidArgument) || !strings.Contains(err.Error(), "/first_page") {
		t.Fatalf("a malformed partition: %v", err)
	}
	var noClient *sheaf.Client
	if _, _, err := noClient.FetchPartition(ctx, partitions[0]); !errors.Is(err, sheaf.CodeInvalidArgument) {
		t.Fatalf("a nil client: %v", err)
	}
	client.Close()
	if _, _, err := client.FetchPartition(ctx, partitions[0]); !errors.Is(err, sheaf.CodeState) {
		t.Fatalf("a closed client: %v", err)
	}
}
