// Package fault is the error model of jinid's services: each error carries
// the code of the Jini specification exception it stands for, which the
// HTTP API turns into a status and a JSON error body (API.md).
package fault

import (
	"errors"
	"fmt"
	"net/http"
)

// Code names a specification exception.
type Code string

// The codes of API.md.
const (
	InvalidArgument      Code = "InvalidArgument"      // IllegalArgumentException
	NullArgument         Code = "NullArgument"         // NullPointerException
	UnsupportedOperation Code = "UnsupportedOperation" // UnsupportedOperationException
	NoSuchObject         Code = "NoSuchObject"         // NoSuchObjectException
	UnknownLease         Code = "UnknownLease"         // UnknownLeaseException
	LeaseDenied          Code = "LeaseDenied"          // LeaseDeniedException
	UnknownEvent         Code = "UnknownEvent"         // UnknownEventException
	InvalidIterator      Code = "InvalidIterator"      // InvalidIteratorException
	Internal             Code = "Internal"             // anything else
)

// Status is the HTTP status of a code.
func (c Code) Status() int {
	switch c {
	case InvalidArgument, NullArgument:
		return http.StatusBadRequest
	case UnsupportedOperation, LeaseDenied, InvalidIterator:
		return http.StatusConflict
	case NoSuchObject, UnknownLease:
		return http.StatusNotFound
	case UnknownEvent:
		return http.StatusGone
	}
	return http.StatusInternalServerError
}

// Error is a service error with its code.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// New returns an error with a code and a message.
func New(c Code, format string, args ...any) error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of err, Internal if it has none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries code c.
func Is(err error, c Code) bool { return err != nil && CodeOf(err) == c }
