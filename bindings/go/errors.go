package sheaf

/*
#include <sheaf.h>
*/
import "C"

import "fmt"

// Code is a sheaf_result: the kind of a failure. A Code is also an error, so that
// errors.Is(err, sheaf.CodeHTTP) tells whether err is a *Error of that code.
type Code int

// The result codes of sheaf.h (append-only: the numbers never change).
const (
	CodeOK              Code = C.SHEAF_OK
	CodeInvalidArgument Code = C.SHEAF_E_INVALID_ARGUMENT
	CodeUnsupported     Code = C.SHEAF_E_UNSUPPORTED
	CodeState           Code = C.SHEAF_E_STATE
	CodeReentrant       Code = C.SHEAF_E_REENTRANT
	CodeHTTP            Code = C.SHEAF_E_HTTP
	CodeTransport       Code = C.SHEAF_E_TRANSPORT
	CodeBadPage         Code = C.SHEAF_E_BAD_PAGE
	CodeIncomplete      Code = C.SHEAF_E_INCOMPLETE
	CodeLoop            Code = C.SHEAF_E_LOOP
	CodePageLimit       Code = C.SHEAF_E_PAGE_LIMIT
	CodeBodyTooLarge    Code = C.SHEAF_E_BODY_TOO_LARGE
	CodeCrossOrigin     Code = C.SHEAF_E_CROSS_ORIGIN
	CodeStopped         Code = C.SHEAF_E_STOPPED
	CodeCancelled       Code = C.SHEAF_E_CANCELLED
	CodeInternal        Code = C.SHEAF_E_INTERNAL
	CodeNotFollowed     Code = C.SHEAF_E_NOT_FOLLOWED
	CodeUndetected      Code = C.SHEAF_E_UNDETECTED
	CodeRepeatedPage    Code = C.SHEAF_E_REPEATED_PAGE
	CodeIO              Code = C.SHEAF_E_IO
	CodeDeadline        Code = C.SHEAF_E_DEADLINE
	CodeCredential      Code = C.SHEAF_E_CREDENTIAL
	CodePartial         Code = C.SHEAF_E_PARTIAL
	CodeRateLimited     Code = C.SHEAF_E_RATE_LIMITED
	CodeAPI             Code = C.SHEAF_E_API // a 2xx answer with errors in its body (a GraphQL answer's "errors")
)

// String is the library's static text for the code (sheaf_result_str).
func (c Code) String() string { return C.GoString(C.sheaf_result_str(C.int(c))) }

// Error makes a Code usable as the target of errors.Is.
func (c Code) Error() string { return "sheaf: " + c.String() }

// Error is a failure reported by the library: the fields of a sheaf_error. No field ever holds a
// credential. Read it with errors.As; test its kind with errors.Is(err, sheaf.CodeXxx).
type Error struct {
	Code          Code   // what kind of failure
	Message       string // a sentence for people: what failed, where, and what to do
	URL           string // the URL concerned (secrets redacted), or ""
	HTTPStatus    int    // the HTTP status for CodeHTTP, else 0
	Body          string // for CodeHTTP: the start of the response body (at most 1 KiB)
	ServerMessage string // the server's own error text ("error", "message", "detail", ...), or ""
	JSONPointer   string // for CodeBadPage: the JSON pointer concerned, or ""
	JSONOffset    int64  // for CodeBadPage: the byte offset where reading failed, or -1
	Signal        string // for CodeNotFollowed: the signal seen, or ""
	Hint          string // the option or preset that would help, or ""

	cause error // what made the binding cancel (the context's error), for errors.Is
}

func (e *Error) Error() string {
	message := e.Message
	if message == "" {
		message = e.Code.String()
	}
	if e.HTTPStatus != 0 && e.Code == CodeHTTP {
		return fmt.Sprintf("sheaf: %s (HTTP %d)", message, e.HTTPStatus)
	}
	return "sheaf: " + message
}

// Is reports whether target is e's Code (errors.Is(err, sheaf.CodeHTTP)).
func (e *Error) Is(target error) bool {
	code, ok := target.(Code)
	return ok && code == e.Code
}

// Unwrap is the context's error when a context ended the run (context.Canceled,
// context.DeadlineExceeded), else nil.
func (e *Error) Unwrap() error { return e.cause }

// takeError converts and frees an error the library returned (NULL: one made from `result`).
func takeError(e *C.sheaf_error, result C.sheaf_result) *Error {
	if e == nil {
		code := Code(result)
		return &Error{Code: code, Message: code.String(), JSONOffset: -1}
	}
	defer C.sheaf_error_free(e)
	return &Error{
		Code:          Code(e.code),
		Message:       C.GoString(e.message),
		URL:           C.GoString(e.url),
		HTTPStatus:    int(e.http_status),
		Body:          C.GoString(e.body),
		ServerMessage: C.GoString(e.server_message),
		JSONPointer:   C.GoString(e.json_pointer),
		JSONOffset:    int64(e.json_offset),
		Signal:        C.GoString(e.signal),
		Hint:          C.GoString(e.hint),
	}
}

// usage is an error of the binding itself (a closed client, a list run twice).
func usage(code Code, message string) *Error {
	return &Error{Code: code, Message: message, JSONOffset: -1}
}
