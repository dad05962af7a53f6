package sheaf

/*
#include <sheaf.h>
*/
import "C"

import (
	"sync"
	"time"
)

// Client is a configured client of one API: its base URL, credentials, headers and policies.
// It is safe for use by any number of goroutines. Close releases it; lists and requests made
// from it keep what they need alive, so they may end after it.
type Client struct {
	mu      sync.RWMutex // held for reading while the C client is used, for writing by Close
	c       *C.sheaf_client
	closing bool // set by Close: nothing new may use c while its groups end

	// The groups made from the client and not yet freed: sheaf.h asks that the C client outlive
	// them, so Close ends them and waits for them before it frees c.
	groupsMu   sync.Mutex
	groups     map[*Group]struct{}
	groupsGone *sync.Cond // signalled when a group is forgotten
}

// Option configures a Client in NewClient.
type Option func(*Client) error

// NewClient creates a client for baseURL, an absolute http or https URL (list and request paths
// are joined to it), and applies opts in order. On any failure nothing is left to close.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	client := &Client{}
	err := call(withCString(baseURL, func(url *C.char) C.sheaf_result {
		return C.sheaf_client_new(&client.c, url)
	}))
	if err != nil {
		return nil, err
	}
	for _, opt := range opts {
		if err := opt(client); err != nil {
			C.sheaf_client_free(client.c)
			return nil, err
		}
	}
	return client, nil
}

// Close hands the log records and events made so far to the hooks, then frees the client. No
// hook is called after Close returns. Lists and requests already made keep the C client alive and
// go on (their hooks are closed too); new ones are refused with CodeState. Groups are different
// (the C client must outlive them): Close cancels the groups that run, frees those that have not
// started, and waits until each has ended, so a group's Each callback must not call Close.
// Calling it again does nothing.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	if c.c == nil || c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	c.mu.Unlock()
	c.endGroups()
	c.mu.Lock()
	defer c.mu.Unlock()
	err := call(func() C.sheaf_result { return C.sheaf_client_flush_hooks(c.c) })
	C.sheaf_client_free(c.c)
	c.c = nil
	return err
}

// use runs f with the C client under the read lock; a *Error of CodeState once closed or closing.
func (c *Client) use(f func(*C.sheaf_client) error) error {
	if c == nil {
		return usage(CodeInvalidArgument, "the client is nil")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.c == nil || c.closing {
		return usage(CodeState, "the client is closed")
	}
	return f(c.c)
}

// remember records a new group; called inside use, so never once Close has begun.
func (c *Client) remember(g *Group) {
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	if c.groups == nil {
		c.groups = map[*Group]struct{}{}
		c.groupsGone = sync.NewCond(&c.groupsMu)
	}
	c.groups[g] = struct{}{}
}

// forget drops a group once its C group is freed.
func (c *Client) forget(g *Group) {
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	delete(c.groups, g)
	if c.groupsGone != nil {
		c.groupsGone.Broadcast()
	}
}

// endGroups closes every group of the client and waits until all are freed. Closing a running
// group cancels it, and its run frees it once its pull loop sees the end.
func (c *Client) endGroups() {
	c.groupsMu.Lock()
	groups := make([]*Group, 0, len(c.groups))
	for g := range c.groups {
		groups = append(groups, g)
	}
	c.groupsMu.Unlock()
	for _, g := range groups {
		g.Close()
	}
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	for len(c.groups) > 0 { // each cancelled run ends after the deltas already waiting
		c.groupsGone.Wait()
	}
}

func (c *Client) setOption(option C.sheaf_option, value int64) error {
	return call(func() C.sheaf_result { return C.sheaf_client_set_option(c.c, option, C.int64_t(value)) })
}

func (c *Client) setCredential(kind C.sheaf_auth, name, value string) error {
	return call(withCStrings(name, value, func(n, v *C.char) C.sheaf_result {
		return C.sheaf_client_set_credential(c.c, kind, n, v)
	}))
}

// WithBearerToken sends "Authorization: Bearer token" to the base URL's origin.
func WithBearerToken(token string) Option {
	return func(c *Client) error {
		return call(withCString(token, func(t *C.char) C.sheaf_result {
			return C.sheaf_client_set_auth(c.c, C.SHEAF_AUTH_BEARER, t)
		}))
	}
}

// WithBasicAuth sends HTTP Basic credentials (RFC 7617) to the base URL's origin.
func WithBasicAuth(user, password string) Option {
	return func(c *Client) error { return c.setCredential(C.SHEAF_AUTH_BASIC, user, password) }
}

// WithAPIKeyHeader sends the header `name` set to key to the base URL's origin.
func WithAPIKeyHeader(name, key string) Option {
	return func(c *Client) error { return c.setCredential(C.SHEAF_AUTH_API_KEY_HEADER, name, key) }
}

// WithAPIKeyQuery sends the query parameter `name` set to key to the base URL's origin (and
// keeps it out of every message).
func WithAPIKeyQuery(name, key string) Option {
	return func(c *Client) error { return c.setCredential(C.SHEAF_AUTH_API_KEY_QUERY, name, key) }
}

// WithHeader adds a header sent with every list page and request.
func WithHeader(name, value string) Option {
	return func(c *Client) error {
		return call(withCStrings(name, value, func(n, v *C.char) C.sheaf_result {
			return C.sheaf_client_add_header(c.c, n, v)
		}))
	}
}

// WithSecretParam names a query parameter whose values are redacted from messages and URLs.
func WithSecretParam(name string) Option {
	return func(c *Client) error {
		return call(withCString(name, func(n *C.char) C.sheaf_result {
			return C.sheaf_client_add_secret_param(c.c, n)
		}))
	}
}

// WithWindow sets how many pages a list has in flight at once (1..64; default 8), the window it
// starts with when the window adapts.
func WithWindow(pages int) Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_WINDOW, int64(pages)) }
}

// WithAdaptiveWindow turns the adaptive window on (the default) or off, and with on, caps it at
// maxPages (1..64; 0 keeps the default of 64).
func WithAdaptiveWindow(on bool, maxPages int) Option {
	return func(c *Client) error {
		value := int64(0)
		if on {
			value = 1
		}
		if err := c.setOption(C.SHEAF_OPT_ADAPTIVE_WINDOW, value); err != nil || !on || maxPages == 0 {
			return err
		}
		return c.setOption(C.SHEAF_OPT_MAX_WINDOW, int64(maxPages))
	}
}

// WithTimeout sets the whole-request timeout (0: none; default 30 s).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_TIMEOUT_MS, d.Milliseconds()) }
}

// WithMaxWait sets the longest a request waits for a spent rate limit to reset (default 60 s;
// 0: never waits): the client never has more requests in flight to an origin than the server's
// rate-limit headers said are left, and a limit that resets later fails the list with a *Error of
// CodeRateLimited before anything more is sent (its Result's ResumeToken goes on after the reset).
func WithMaxWait(d time.Duration) Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_MAX_WAIT_MS, d.Milliseconds()) }
}

// WithCache gives the client a response cache in folder (made if missing, private to the user):
// every GET answered 200 with an ETag or Last-Modified is stored there and asked for again with
// If-None-Match / If-Modified-Since, so a re-sync pays only for the pages that changed (a 304
// answers with the stored page; GitHub charges no quota for one). Nothing is served without
// asking. No URL, token or header value is written to disk; several processes may share the
// folder. maxBytes bounds it (0: 512 MiB), the least recently used entries going first.
func WithCache(folder string, maxBytes int64) Option {
	return func(c *Client) error {
		return call(withCString(folder, func(f *C.char) C.sheaf_result {
			return C.sheaf_client_set_cache(c.c, f, C.int64_t(maxBytes))
		}))
	}
}

// WithConnectTimeout sets the connect timeout (0: the transport's default; default 10 s).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_CONNECT_TIMEOUT_MS, d.Milliseconds()) }
}

// WithRetries sets the attempts per request, the first included (1..100; default 4), and the
// backoff: base (default 100 ms, full jitter) and the cap of a backoff or Retry-After (default 30 s).
func WithRetries(attempts int, base, max time.Duration) Option {
	return func(c *Client) error {
		if err := c.setOption(C.SHEAF_OPT_MAX_ATTEMPTS, int64(attempts)); err != nil {
			return err
		}
		if err := c.setOption(C.SHEAF_OPT_RETRY_BASE_MS, base.Milliseconds()); err != nil {
			return err
		}
		return c.setOption(C.SHEAF_OPT_RETRY_MAX_MS, max.Milliseconds())
	}
}

// WithMaxPages sets the page cap of a list (default 10000): a list needing more fails.
func WithMaxPages(pages int64) Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_MAX_PAGES, pages) }
}

// WithMaxBodyBytes sets the body cap of a response (default 64 MiB).
func WithMaxBodyBytes(bytes int64) Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_MAX_BODY_BYTES, bytes) }
}

// WithMaxRedirects sets the redirects followed per request (0..50; default 10).
func WithMaxRedirects(n int) Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_MAX_REDIRECTS, int64(n)) }
}

// WithCrossOrigin lets next links and redirects leave the base URL's origin (without credentials).
func WithCrossOrigin(allow bool) Option {
	return func(c *Client) error {
		value := int64(0)
		if allow {
			value = 1
		}
		return c.setOption(C.SHEAF_OPT_CROSS_ORIGIN, value)
	}
}

// HTTPVersion is the value of WithHTTPVersion.
type HTTPVersion int

const (
	HTTPAuto            HTTPVersion = C.SHEAF_HTTP_AUTO              // HTTP/2 where TLS negotiates it, else HTTP/1.1
	HTTP11              HTTPVersion = C.SHEAF_HTTP_1_1               // HTTP/1.1 only
	HTTP2PriorKnowledge HTTPVersion = C.SHEAF_HTTP_2_PRIOR_KNOWLEDGE // h2c on http:// without asking first
)

// WithHTTPVersion chooses the HTTP version the transport speaks.
func WithHTTPVersion(v HTTPVersion) Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_HTTP_VERSION, int64(v)) }
}

// WithTLSFiles sets the CA bundle to trust instead of the system's and, for mutual TLS, the
// client certificate and key (PEM files); "" leaves one as it is.
func WithTLSFiles(caFile, certFile, keyFile string) Option {
	return func(c *Client) error {
		for _, f := range []struct {
			which C.sheaf_tls_file
			path  string
		}{{C.SHEAF_TLS_CA_FILE, caFile}, {C.SHEAF_TLS_CERT, certFile}, {C.SHEAF_TLS_KEY, keyFile}} {
			if f.path == "" {
				continue
			}
			which := f.which
			if err := call(withCString(f.path, func(p *C.char) C.sheaf_result {
				return C.sheaf_client_set_tls_file(c.c, which, p)
			})); err != nil {
				return err
			}
		}
		return nil
	}
}

// WithInsecureTLS turns certificate verification off (tests against self-signed servers only).
func WithInsecureTLS() Option {
	return func(c *Client) error { return c.setOption(C.SHEAF_OPT_TLS_INSECURE, 1) }
}
