package sheaf_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sheaf.dev/sheaf"
)

// A text holding a NUL byte is refused wherever it is handed to the library (issue 47): C would
// cut it there, and a tag, a header or a path shorter than given would go unnoticed.
func TestATextHoldingANULIsRefusedNeverCut(t *testing.T) {
	client := fresh(t)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, sheaf.CodeInvalidArgument) || !strings.Contains(err.Error(), "NUL byte") {
			t.Fatalf("%s: want a refusal naming the NUL byte, got %v", what, err)
		}
	}
	_, err := client.List("/anchor?n=5\x00&per_page=10")
	refused("a path", err)
	_, err = client.List("/anchor?n=5", sheaf.Header("X-Tag", "a\x00b"))
	refused("a header", err)
	_, err = client.List("/anchor?n=5", sheaf.Body("POST", "application/json\x00; x", []byte("{}")))
	refused("a content type", err)
	_, err = client.FetchMany(context.Background(), []string{"/anchor?n=5&per_page=10"}, sheaf.Tags("a\x00b"))
	refused("a tag", err)
	_, err = client.FetchEach(context.Background(), "/anchor?n=5&per_page=10", []string{"/anchor?n={/id}\x00"})
	refused("a template", err)
	// The same values without the NUL pass.
	if _, err := client.FetchMany(context.Background(), []string{"/anchor?n=5&per_page=10"}, sheaf.Tags("ab")); err != nil {
		t.Fatal(err)
	}
}
