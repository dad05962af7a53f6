// Package sheaf is the Go binding of Sheaf, a client for paginated REST list endpoints: a whole
// paginated list as one call (List.FetchAll, FetchAllInto), or item by item as the pages arrive
// (List.Each), cancellable through a context.Context; many lists as one job (Client.FetchMany,
// Client.FetchEach, Group.Each); a list split into partitions for other processes
// (List.Partitions, Client.FetchPartition); single requests (Client.Do) and downloads beside them.
//
// It wraps the C library libsheaf.so.1 (include/sheaf.h) with cgo, found through pkg-config
// ("sheaf"), and uses the standard library only.
//
// # Threads
//
// A Client may be shared by any number of goroutines and may run many lists and requests at once.
// A List is used by one goroutine at a time (as sheaf.h says of sheaf_list): its description
// options, its run (FetchAll, Each) and Close. List.Cancel is the exception: any goroutine may call
// it at any time. A Group is used the same way (Group.Cancel the exception). Log and event hooks
// run on threads of the library, one call at a time per client, never after Client.Close returns.
//
// # Resources
//
// Every C object this package creates is released explicitly, never by a finalizer: a Client by
// Close; a List when its run ends (FetchAll and Each free it and keep its Result), or by Close
// when it never ran; a Group likewise, with the lists it took; a request when Do returns. Every
// string the library hands over is copied into Go memory and freed at once (sheaf_free,
// sheaf_error_free). A Client, List or Group that is dropped without Close leaks its C side:
// defer Close.
//
// # Errors
//
// Every failure the library reports is a *Error, carrying the fields of sheaf_error (Code, Message,
// URL, HTTPStatus, Body, ServerMessage, JSONPointer, ...); use errors.As to read them, and errors.Is
// with a Code (errors.Is(err, sheaf.CodeHTTP)) to test the kind. Credentials never appear in them.
package sheaf

/*
#cgo pkg-config: sheaf
#include <stdlib.h>
#include <sheaf.h>
*/
import "C"

import (
	"runtime"
	"strings"
	"unsafe"
)

// Version is the version of the libsheaf loaded at run time, "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.sheaf_version_string()) }

// VersionNumber is the loaded library's MAJOR*10000 + MINOR*100 + PATCH.
func VersionNumber() int { return int(C.sheaf_version_number()) }

// call runs f, a call returning a sheaf_result, and turns a failure into a *Error. The goroutine is
// locked to its thread around f and sheaf_last_error: the library keeps the last error per thread,
// and Go may otherwise move the goroutine to another thread between the two calls.
func call(f func() C.sheaf_result) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		if recovered := recover(); recovered != nil {
			if _, ok := recovered.(nulInText); !ok {
				panic(recovered)
			}
			err = nulError()
		}
	}()
	result := f()
	if result == C.SHEAF_OK {
		return nil
	}
	return takeError(C.sheaf_last_error(), result)
}

// nulInText is what cString panics with for a text holding a NUL byte: C would cut it there (a
// tag, a header, a URL shorter than given). call recovers it as nulError; a caller outside call
// checks with hasNUL first.
type nulInText struct{}

// nulError is the refusal of a text holding a NUL byte (the text is not shown: it may be a secret).
func nulError() error {
	return usage(CodeInvalidArgument, "a text given to the library holds a NUL byte: C would cut it there, so it is refused")
}

// hasNUL reports whether any of texts holds a NUL byte.
func hasNUL(texts ...string) bool {
	for _, text := range texts {
		if strings.IndexByte(text, 0) >= 0 {
			return true
		}
	}
	return false
}

// cString is a C copy of s, freed by the caller (C.free). It panics with nulInText for a text
// holding a NUL byte: only inside call, or after hasNUL.
func cString(s string) *C.char {
	if hasNUL(s) {
		panic(nulInText{})
	}
	return C.CString(s)
}

// withCString runs f with a C copy of s, freed when f returns.
func withCString(s string, f func(*C.char) C.sheaf_result) func() C.sheaf_result {
	return func() C.sheaf_result {
		cs := cString(s)
		defer C.free(unsafe.Pointer(cs))
		return f(cs)
	}
}

// withCStrings runs f with C copies of a and b, freed when f returns.
func withCStrings(a, b string, f func(*C.char, *C.char) C.sheaf_result) func() C.sheaf_result {
	return func() C.sheaf_result {
		if hasNUL(a, b) {
			panic(nulInText{}) // before either is copied: nothing to free
		}
		ca, cb := cString(a), cString(b)
		defer C.free(unsafe.Pointer(ca))
		defer C.free(unsafe.Pointer(cb))
		return f(ca, cb)
	}
}

// takeString copies an owned C string into Go and frees it (sheaf_free); "" for NULL.
func takeString(s *C.char) string {
	if s == nil {
		return ""
	}
	defer C.sheaf_free(unsafe.Pointer(s))
	return C.GoString(s)
}
