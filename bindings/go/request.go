package sheaf

/*
#include <stdlib.h>
#include <sheaf.h>
*/
import "C"

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"unsafe"
)

// Request is one HTTP request of a client (Client.Do). It goes through the client's credentials,
// headers, timeouts, retries (for idempotent methods, or with Retry) and redirect rules.
type Request struct {
	Method      string      // "GET" when empty
	Path        string      // joined to the base URL as list paths are; may carry a query
	Segments    []string    // path segments appended, each percent-encoded ("a/b" stays one segment)
	Query       url.Values  // query parameters, sent in the order of their sorted names
	Header      http.Header // request headers, replacing the client's of the same name
	Body        []byte      // the body, sent with ContentType
	ContentType string      // e.g. "application/json"
	Form        url.Values  // an application/x-www-form-urlencoded body, in place of Body
	OutputFile  string      // a download: the body goes to this file (renamed there once whole)
	Retry       bool        // retry transient failures even for a method that is not idempotent
}

// Response is the answer to a Request.
type Response struct {
	StatusCode int
	URL        string      // the URL that answered, after redirects (secret query values redacted)
	Header     http.Header // names canonicalized; a name's values in the order received
	Body       []byte      // empty for a download that succeeded
}

// Do sends req and waits for its answer. A final status outside 2xx returns the Response and a
// *Error of CodeHTTP (errors.As reads its HTTPStatus, Body and ServerMessage); a failure below HTTP
// returns a nil Response. ctx's end cancels the request (sheaf_request_cancel): the error is then
// a *Error of CodeCancelled wrapping ctx.Err().
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	var r *C.sheaf_request
	err := c.use(func(client *C.sheaf_client) error {
		return call(withCStrings(method, req.Path, func(m, p *C.char) C.sheaf_result {
			return C.sheaf_request_new(&r, client, m, p)
		}))
	})
	if err != nil {
		return nil, err
	}
	defer C.sheaf_request_free(r)
	if err := describeRequest(r, &req); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: CodeCancelled, Message: "the context ended before the request started", JSONOffset: -1, cause: err}
	}
	if err := call(func() C.sheaf_result { return C.sheaf_request_start(r, nil, nil, nil) }); err != nil {
		return nil, err
	}
	var mu sync.Mutex // the free (deferred above) waits for a cancel under way
	done := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			C.sheaf_request_cancel(r)
		}
	})
	defer func() {
		stop()
		mu.Lock()
		done = true
		mu.Unlock()
	}()
	result := C.sheaf_request_wait(r)
	var response *Response
	if status := int(C.sheaf_request_status(r)); status != 0 {
		response = readResponse(r, status)
	}
	if result == C.SHEAF_OK {
		return response, nil
	}
	failure := takeError(C.sheaf_request_error(r), result)
	if ctx.Err() != nil && failure.Code == CodeCancelled {
		failure.cause = ctx.Err()
	}
	return response, failure
}

// Download fetches path into the file at file (see Request.OutputFile): the file is replaced only
// once the whole body has arrived.
func (c *Client) Download(ctx context.Context, path, file string) (*Response, error) {
	return c.Do(ctx, Request{Path: path, OutputFile: file})
}

func describeRequest(r *C.sheaf_request, req *Request) error {
	for _, segment := range req.Segments {
		if err := call(withCString(segment, func(s *C.char) C.sheaf_result { return C.sheaf_request_add_segment(r, s) })); err != nil {
			return err
		}
	}
	pairs := func(values url.Values, add func(n, v *C.char) C.sheaf_result) error {
		names := make([]string, 0, len(values))
		for name := range values {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			for _, value := range values[name] {
				if err := call(withCStrings(name, value, add)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := pairs(req.Query, func(n, v *C.char) C.sheaf_result { return C.sheaf_request_add_query(r, n, v) }); err != nil {
		return err
	}
	if err := pairs(url.Values(req.Header), func(n, v *C.char) C.sheaf_result { return C.sheaf_request_add_header(r, n, v) }); err != nil {
		return err
	}
	if req.Body != nil {
		contentType := req.ContentType
		if contentType == "" {
			contentType = "application/octet-stream"
		}
		err := call(withCString(contentType, func(t *C.char) C.sheaf_result {
			var data unsafe.Pointer
			if len(req.Body) > 0 {
				data = unsafe.Pointer(&req.Body[0]) // copied by the call; holds no Go pointer
			}
			return C.sheaf_request_set_body(r, t, data, C.size_t(len(req.Body)))
		}))
		if err != nil {
			return err
		}
	}
	if err := pairs(req.Form, func(n, v *C.char) C.sheaf_result { return C.sheaf_request_add_form(r, n, v) }); err != nil {
		return err
	}
	if req.OutputFile != "" {
		if err := call(withCString(req.OutputFile, func(p *C.char) C.sheaf_result { return C.sheaf_request_set_output_file(r, p) })); err != nil {
			return err
		}
	}
	if req.Retry {
		return call(func() C.sheaf_result { return C.sheaf_request_set_retry(r, 1) })
	}
	return nil
}

func readResponse(r *C.sheaf_request, status int) *Response {
	response := &Response{StatusCode: status, Header: http.Header{}}
	if u := C.sheaf_request_url(r); u != nil {
		response.URL = C.GoString(u)
	}
	for i := C.size_t(0); i < C.sheaf_request_header_count(r); i++ {
		var name, value *C.char
		if C.sheaf_request_header(r, i, &name, &value) == C.SHEAF_OK {
			response.Header.Add(C.GoString(name), C.GoString(value))
		}
	}
	var length C.size_t
	if body := C.sheaf_request_body(r, &length); body != nil {
		response.Body = C.GoBytes(unsafe.Pointer(body), C.int(length))
	}
	return response
}
