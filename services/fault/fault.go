// Package fault is the error model of jinid's services: each error carries
// the code of the Jini specification exception it stands for, which the
// HTTP API turns into a status and a JSON error body (API.md). The codes
// and the error are the API's own (apitypes); this package is how
// services make and read them.
package fault

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/jinid/jinid/services/apitypes"
)

// Code names a specification exception; the codes are apitypes' (one
// name each, where a client that links the wire types alone finds them).
type Code = apitypes.Code

// Error is a service error with its code.
type Error = apitypes.Error

// New returns an error with a code and a message.
func New(c Code, format string, args ...any) error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Limit returns an error for a limit reached: TooLarge or TooMany (with
// a retry time in seconds, or 0), naming the limit by its config key.
func Limit(c Code, limit string, retryAfter int, format string, args ...any) error {
	return &Error{Code: c, Limit: limit, RetryAfter: retryAfter, Message: fmt.Sprintf(format, args...)}
}

// Gone is the NoSuchObject of a leased thing (what: "mailbox
// registration", "renewal set") that is not there: its lease ended, or
// it never existed.
func Gone(what, id string) error {
	return New(apitypes.NoSuchObject, "no %s %q (its lease ended, or it never existed)", what, Short(id))
}

// Short is at most the first 64 bytes of an input, for messages: an
// error never echoes more of what it was sent than that.
func Short(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// CodeOf returns the code of err, Internal if it has none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return apitypes.Internal
}

// Coded reports whether err carries a code of its own.
func Coded(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Is reports whether err carries code c.
func Is(err error, c Code) bool { return err != nil && CodeOf(err) == c }

// As returns err's coded error, or an Internal one carrying its text.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: apitypes.Internal, Message: err.Error()}
}
