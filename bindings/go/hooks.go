package sheaf

/*
#include <stdint.h>
#include <stdlib.h>
#include <sheaf.h>
sheaf_result sheafgo_set_log(sheaf_client *client, sheaf_log_level level, uintptr_t handle);
sheaf_result sheafgo_set_event_handler(sheaf_client *client, uintptr_t handle);
sheaf_result sheafgo_set_token_provider(sheaf_client *client, uintptr_t handle);
*/
import "C"

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/cgo"
	"strings"
	"time"
	"unsafe"
)

// WithLogger sends the client's log records to logger: one record per request, retry and list
// plan at slog.LevelInfo, redirects and window changes at slog.LevelDebug, failures at Warn and
// Error. The library formats only the levels logger is enabled for (asked once, here). Records
// come on a library thread, in order, one at a time; none after Close returns (Close hands over
// those still queued first). No record holds a credential.
func WithLogger(logger *slog.Logger) Option {
	return func(c *Client) error {
		if logger == nil {
			return usage(CodeInvalidArgument, "WithLogger needs a logger, not nil")
		}
		ctx := context.Background()
		level := C.sheaf_log_level(C.SHEAF_LOG_ERROR)
		switch {
		case logger.Enabled(ctx, slog.LevelDebug):
			level = C.SHEAF_LOG_DEBUG
		case logger.Enabled(ctx, slog.LevelInfo):
			level = C.SHEAF_LOG_INFO
		case logger.Enabled(ctx, slog.LevelWarn):
			level = C.SHEAF_LOG_WARNING
		}
		handle := cgo.NewHandle(logger)
		err := call(func() C.sheaf_result { return C.sheafgo_set_log(c.c, level, C.uintptr_t(handle)) })
		if err != nil {
			handle.Delete() // a refused call never calls destroy
		}
		return err
	}
}

// EventKind says what an Event is about.
type EventKind int

const (
	EventAuthRefused       EventKind = C.SHEAF_EVENT_AUTH_REFUSED       // a final 401 or 403
	EventOffline           EventKind = C.SHEAF_EVENT_OFFLINE            // no resolution or connection on the last attempt
	EventServerUnavailable EventKind = C.SHEAF_EVENT_SERVER_UNAVAILABLE // a 5xx or no answer in time on the last attempt
	EventRateLimited       EventKind = C.SHEAF_EVENT_RATE_LIMITED       // a 429 (or 503 with Retry-After)
	EventRetrying          EventKind = C.SHEAF_EVENT_RETRYING           // a transient failure, tried again after Wait
)

func (k EventKind) String() string {
	switch k {
	case EventAuthRefused:
		return "auth_refused"
	case EventOffline:
		return "offline"
	case EventServerUnavailable:
		return "server_unavailable"
	case EventRateLimited:
		return "rate_limited"
	case EventRetrying:
		return "retrying"
	}
	return "unknown"
}

// Event is something that happened that a caller may act on (sheaf_event), redacted like logs.
type Event struct {
	Kind           EventKind
	Message        string
	Method         string
	URL            string
	HTTPStatus     int           // 0 for a failure below HTTP
	TransportError int           // a sheaf_transport_error below HTTP; -1 when the server answered
	Attempt        int           // from 1
	Wait           time.Duration // the wait before the next attempt; negative when there is none
}

// WithEventHandler calls handle with each event of the client, on a library thread, one at a time
// and in order with the log records, never after Close returns. LogEvents(logger) is a handler
// that logs them.
func WithEventHandler(handle func(Event)) Option {
	return func(c *Client) error {
		if handle == nil {
			return usage(CodeInvalidArgument, "WithEventHandler needs a function, not nil")
		}
		h := cgo.NewHandle(handle)
		err := call(func() C.sheaf_result { return C.sheafgo_set_event_handler(c.c, C.uintptr_t(h)) })
		if err != nil {
			h.Delete()
		}
		return err
	}
}

// LogEvents is an event handler that logs each event to logger at slog.LevelWarn.
func LogEvents(logger *slog.Logger) func(Event) {
	return func(e Event) {
		attrs := []slog.Attr{slog.String("event", e.Kind.String()), slog.String("method", e.Method),
			slog.String("url", e.URL), slog.Int("attempt", e.Attempt)}
		if e.HTTPStatus != 0 {
			attrs = append(attrs, slog.Int("http_status", e.HTTPStatus))
		}
		if e.Wait >= 0 {
			attrs = append(attrs, slog.Duration("wait", e.Wait))
		}
		logger.LogAttrs(context.Background(), slog.LevelWarn, e.Message, attrs...)
	}
}

var logKinds = map[C.sheaf_log_kind]string{
	C.SHEAF_LOG_REQUEST: "request", C.SHEAF_LOG_RETRY: "retry", C.SHEAF_LOG_REDIRECT: "redirect",
	C.SHEAF_LOG_PLAN: "plan", C.SHEAF_LOG_WINDOW: "window",
}

func slogLevel(level C.sheaf_log_level) slog.Level {
	switch level {
	case C.SHEAF_LOG_ERROR:
		return slog.LevelError
	case C.SHEAF_LOG_WARNING:
		return slog.LevelWarn
	case C.SHEAF_LOG_INFO:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

//export sheafgoLog
func sheafgoLog(record *C.sheaf_log_record, handle C.uintptr_t) {
	defer func() { _ = recover() }() // a panic must not unwind into the library's thread
	logger, ok := cgo.Handle(handle).Value().(*slog.Logger)
	if !ok || record.version < 1 {
		return
	}
	kind, known := logKinds[record.kind]
	if !known {
		kind = "other"
	}
	attrs := []slog.Attr{slog.String("kind", kind)}
	if record.method != nil {
		attrs = append(attrs, slog.String("method", C.GoString(record.method)))
	}
	if record.url != nil {
		attrs = append(attrs, slog.String("url", C.GoString(record.url)))
	}
	if record.http_status != 0 {
		attrs = append(attrs, slog.Int("http_status", int(record.http_status)))
	}
	if record.attempt != 0 {
		attrs = append(attrs, slog.Int("attempt", int(record.attempt)))
	}
	if record.duration_ms >= 0 {
		attrs = append(attrs, slog.Duration("duration", time.Duration(record.duration_ms)*time.Millisecond))
	}
	if record.bytes >= 0 {
		attrs = append(attrs, slog.Int64("bytes", int64(record.bytes)))
	}
	if record.delay_ms >= 0 {
		attrs = append(attrs, slog.Duration("delay", time.Duration(record.delay_ms)*time.Millisecond))
	}
	logger.LogAttrs(context.Background(), slogLevel(record.level), C.GoString(record.message), attrs...)
}

//export sheafgoEvent
func sheafgoEvent(event *C.sheaf_event, handle C.uintptr_t) {
	defer func() { _ = recover() }()
	handler, ok := cgo.Handle(handle).Value().(func(Event))
	if !ok || event.version < 1 {
		return
	}
	wait := time.Duration(-1)
	if event.wait_ms >= 0 {
		wait = time.Duration(event.wait_ms) * time.Millisecond
	}
	handler(Event{
		Kind: EventKind(event.kind), Message: C.GoString(event.message), Method: C.GoString(event.method),
		URL: C.GoString(event.url), HTTPStatus: int(event.http_status), TransportError: int(event.transport_error),
		Attempt: int(event.attempt), Wait: wait,
	})
}

//export sheafgoDestroy
func sheafgoDestroy(handle C.uintptr_t) {
	cgo.Handle(handle).Delete()
}

// WithTokenProvider makes the client's bearer token come from provide (in place of
// WithBearerToken; the later of the two options wins): the client calls provide(false) for the
// token before its first request, keeps the token, and calls provide(true) when the server
// answers 401 to it, then sends the refused request again once with the new token (not counted
// as a retry; a second 401 is the request's answer). Requests refused together, a list's window,
// share one refresh. The token goes only to the base URL's origin and never into a message.
//
// provide runs on a library thread, never two calls at once for one client, and may block (a
// call to a token endpoint, on another Client: one on this client would wait for itself); the
// client's timeout (WithTimeout) bounds the wait for it. Its error, or an empty token, fails the
// requests waiting for it with a *Error of CodeCredential, whose message is the error's text (it
// must hold no secret); the next request asks again. A panic in provide is recovered and fails
// them the same way. Lists and requests of the client keep provide until they end, Close or not.
func WithTokenProvider(provide func(refresh bool) (string, error)) Option {
	return func(c *Client) error {
		if provide == nil {
			return usage(CodeInvalidArgument, "WithTokenProvider needs a function, not nil")
		}
		h := cgo.NewHandle(provide)
		err := call(func() C.sheaf_result { return C.sheafgo_set_token_provider(c.c, C.uintptr_t(h)) })
		if err != nil {
			h.Delete() // a refused call never calls destroy
		}
		return err
	}
}

//export sheafgoCredential
func sheafgoCredential(reply *C.sheaf_credential_reply, handle C.uintptr_t) {
	// Every way out answers: a panic or an answer the library refused fails the reply, never
	// unwinding into the library's thread.
	answered := false
	fail := func(message string) {
		text := C.CString(message)
		defer C.free(unsafe.Pointer(text))
		C.sheaf_credential_reply_fail(reply, text)
		answered = true
	}
	defer func() {
		if recovered := recover(); recovered != nil && !answered {
			fail("the token provider panicked")
		} else if !answered {
			fail("the token provider gave no token")
		}
	}()
	provide, ok := cgo.Handle(handle).Value().(func(bool) (string, error))
	if !ok {
		fail("the client's token provider is gone")
		return
	}
	token, err := provide(C.sheaf_credential_reply_is_refresh(reply) != 0)
	switch {
	case err != nil:
		fail(fmt.Sprintf("the token provider failed: %v", err))
	case token == "":
		fail("the token provider gave an empty token")
	case strings.IndexByte(token, 0) >= 0:
		fail("the token provider gave a token with a NUL byte")
	default:
		text := C.CString(token)
		defer C.free(unsafe.Pointer(text))
		if C.sheaf_credential_reply_set(reply, text) == C.SHEAF_OK {
			answered = true
		} else {
			fail("the token provider gave a token that cannot be sent")
		}
	}
}
