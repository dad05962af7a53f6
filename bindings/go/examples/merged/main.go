// Command merged is an example service over the Go binding: it serves GET /items, the whole of an
// upstream paginated list merged into one JSON array, however the upstream pages it (Sheaf
// detects the convention from the first page and fetches the rest concurrently).
//
//	merged -listen 127.0.0.1:8080 -upstream 'https://api.example.com/v1/things?per_page=100'
//
// The upstream list's URL comes from -upstream or $MERGED_UPSTREAM; a bearer token, when the
// upstream needs one, from $MERGED_TOKEN (kept out of flags, so it is not in the process list).
// A client that goes away cancels the upstream run (the request's context).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sheaf.dev/sheaf"
)

// Service answers GET /items with the upstream list merged.
type Service struct {
	client *sheaf.Client
	path   string // the list's path and query, joined to the client's base URL
	logger *slog.Logger
}

// NewService makes the service of the list at upstream (an absolute http(s) URL), its sheaf
// client configured with opts. Close releases it.
func NewService(upstream string, logger *slog.Logger, opts ...sheaf.Option) (*Service, error) {
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the upstream %q is not an absolute http(s) URL", upstream)
	}
	base := &url.URL{Scheme: u.Scheme, Host: u.Host}
	path := (&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}).String()
	opts = append([]sheaf.Option{sheaf.WithLogger(logger)}, opts...)
	client, err := sheaf.NewClient(base.String(), opts...)
	if err != nil {
		return nil, err
	}
	return &Service{client: client, path: path, logger: logger}, nil
}

// Close releases the service's client.
func (s *Service) Close() error { return s.client.Close() }

func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/items" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "only GET")
		return
	}
	list, err := s.client.List(s.path)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer list.Close()
	// The whole list before the first byte: a failure half-way is then a 502, not a 200 whose
	// array is cut short.
	items, result, err := list.FetchAll(r.Context())
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, context.Canceled) {
			status = 499 // the client went away; nobody reads this
		}
		s.logger.Warn("upstream list failed", "error", err, "items", len(items))
		writeError(w, status, err.Error())
		return
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	body, err := json.Marshal(items)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Item-Count", fmt.Sprint(len(items)))
	w.Header().Set("X-Upstream-Pages", fmt.Sprint(result.Pages))
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": message})
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	upstream := flag.String("upstream", os.Getenv("MERGED_UPSTREAM"), "the upstream list's URL (default $MERGED_UPSTREAM)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var opts []sheaf.Option
	if token := os.Getenv("MERGED_TOKEN"); token != "" {
		opts = append(opts, sheaf.WithBearerToken(token))
	}
	service, err := NewService(*upstream, logger, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "merged:", err)
		os.Exit(2)
	}
	defer service.Close()
	server := &http.Server{Addr: *listen, Handler: service, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	logger.Info("serving", "listen", *listen, "upstream", *upstream)
	if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "merged:", err)
		os.Exit(1)
	}
}
