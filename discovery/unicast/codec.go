// Package unicast implements Jini unicast discovery over TCP: the
// LookupLocator, the request a client sends, and the response a lookup
// service answers with, in protocol versions 1 and 2 (plain-text format),
// wire-compatible with the Java implementation.
package unicast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
)

// Errors callers act on; decode errors wrap them and say what was wrong.
var (
	// ErrMalformed: the bytes do not follow the protocol.
	ErrMalformed = errors.New("malformed unicast discovery data")
	// ErrVersion: a protocol version jinid does not speak.
	ErrVersion = errors.New("unsupported unicast discovery protocol version")
	// ErrNoFormat: the lookup service accepted none of the proposed
	// formats (it answered the null format ID).
	ErrNoFormat = errors.New("lookup service accepted none of the proposed formats")
	// ErrTooLarge: the response is larger than the reader allows.
	ErrTooLarge = javaio.ErrTooLarge
)

// DefaultMaxResponseSize bounds how much of a response jinid reads: a
// registrar proxy is a few kilobytes; a megabyte is generous and still
// harmless on a small board.
const DefaultMaxResponseSize = 1 << 20

// maxRequestSize: a v2 request is at most 6 + 65535×8 bytes.
const maxRequestSize = 6 + 0xFFFF*8

// Request is what a unicast discovery client sends first.
type Request struct {
	Version int
	// Formats proposed by a version 2 client, in its order of preference.
	Formats []discovery.FormatID
}

// NewRequest returns the request jinid sends: version 1 alone, or version
// 2 proposing the plain-text format (the only one it speaks).
func NewRequest(version int) Request {
	if version == discovery.ProtocolV2 {
		return Request{Version: version, Formats: []discovery.FormatID{discovery.PlaintextFormat}}
	}
	return Request{Version: version}
}

// Append appends the request's bytes to dst.
func (q Request) Append(dst []byte) ([]byte, error) {
	switch q.Version {
	case discovery.ProtocolV1:
		return append(dst, 0, 0, 0, 1), nil
	case discovery.ProtocolV2:
		if len(q.Formats) > 0xFFFF {
			return dst, fmt.Errorf("%d format IDs: at most 65535 can be proposed", len(q.Formats))
		}
		dst = append(dst, 0, 0, 0, 2, byte(len(q.Formats)>>8), byte(len(q.Formats)))
		for _, f := range q.Formats {
			dst = appendU64(dst, uint64(f))
		}
		return dst, nil
	}
	return dst, fmt.Errorf("%w: %d", ErrVersion, q.Version)
}

// Proposes reports whether the request proposes format f.
func (q Request) Proposes(f discovery.FormatID) bool {
	for _, p := range q.Formats {
		if p == f {
			return true
		}
	}
	return false
}

// ReadRequest reads a unicast request, as a lookup service does when a
// client connects.
func ReadRequest(r io.Reader) (Request, error) {
	rd := javaio.NewReader(r, maxRequestSize)
	v, err := rd.Int32("protocol version")
	if err != nil {
		return Request{}, wrapJava(err)
	}
	switch v {
	case discovery.ProtocolV1:
		return Request{Version: 1}, nil
	case discovery.ProtocolV2:
	default:
		return Request{}, fmt.Errorf("%w: %d", ErrVersion, v)
	}
	n, err := rd.Uint16("format count")
	if err != nil {
		return Request{}, wrapJava(err)
	}
	q := Request{Version: 2}
	// Appended one by one: the count alone allocates nothing.
	for i := 0; i < int(n); i++ {
		f, err := rd.Int64("format ID")
		if err != nil {
			return Request{}, fmt.Errorf("format %d of %d: %w", i+1, n, wrapJava(err))
		}
		q.Formats = append(q.Formats, discovery.FormatID(f))
	}
	return q, nil
}

// Response is what a lookup service answers: where it is, its member
// groups, and its registrar proxy.
type Response struct {
	Version int
	// Format is the format a version 2 lookup service chose.
	Format discovery.FormatID
	// Host and Port: version 2 carries them; for version 1 they are the
	// connection's peer, which the reader fills in.
	Host      string
	Port      int
	Groups    []string
	Registrar discovery.Registrar
}

// marshalled returns the proxy bytes to send in the given version,
// marshalling the descriptor when no bytes are given.
func marshalled(r discovery.Registrar, version int) ([]byte, error) {
	if r.Marshalled != nil {
		return r.Marshalled, nil
	}
	c := javaio.MarshalledObject
	if version == discovery.ProtocolV2 {
		c = javaio.MarshalledInstance
	}
	if r.Proxy != nil {
		return javaio.AppendMarshalled(nil, c, r.Proxy), nil
	}
	if r.Descriptor == nil {
		return nil, errors.New("registrar has neither a marshalled proxy nor a descriptor")
	}
	js, err := json.Marshal(r.Descriptor)
	if err != nil {
		return nil, fmt.Errorf("encoding registrar descriptor: %w", err)
	}
	return javaio.AppendMarshalledString(nil, c, string(js)), nil
}

// Append appends the response's bytes to dst, as a lookup service writes
// them after reading the request.
func (p *Response) Append(dst []byte) ([]byte, error) {
	switch p.Version {
	case discovery.ProtocolV1:
		m, err := marshalled(p.Registrar, p.Version)
		if err != nil {
			return dst, err
		}
		dst = append(dst, m...)
		var block []byte
		block = appendU32(block, uint32(len(p.Groups)))
		for _, g := range p.Groups {
			if block, err = javaio.AppendUTF(block, g); err != nil {
				return dst, fmt.Errorf("group %q: %w", g, err)
			}
		}
		return javaio.AppendBlockData(dst, block), nil
	case discovery.ProtocolV2:
		dst = append(dst, 0, 0, 0, 2)
		dst = appendU64(dst, uint64(p.Format))
		if p.Format == discovery.NullFormat {
			return dst, nil
		}
		if p.Format != discovery.PlaintextFormat {
			return dst, &discovery.FormatError{ID: p.Format}
		}
		if p.Port < 0 || p.Port > 0xFFFF {
			return dst, fmt.Errorf("port %d out of range 0-65535", p.Port)
		}
		var err error
		if dst, err = javaio.AppendUTF(dst, p.Host); err != nil {
			return dst, fmt.Errorf("host %q: %w", p.Host, err)
		}
		dst = append(dst, byte(p.Port>>8), byte(p.Port))
		dst = appendU32(dst, uint32(len(p.Groups)))
		for _, g := range p.Groups {
			if dst, err = javaio.AppendUTF(dst, g); err != nil {
				return dst, fmt.Errorf("group %q: %w", g, err)
			}
		}
		m, err := marshalled(p.Registrar, p.Version)
		if err != nil {
			return dst, err
		}
		return append(dst, m...), nil
	}
	return dst, fmt.Errorf("%w: %d", ErrVersion, p.Version)
}

// ReadResponse reads a unicast response of either version, reading no more
// than maxSize bytes. A version 1 response carries no host or port: the
// caller fills them in from the connection's peer. The reader reads in
// small pieces: give it a bufio.Reader over a connection.
func ReadResponse(r io.Reader, maxSize int64) (*Response, error) {
	rd := javaio.NewReader(r, maxSize)
	head, err := rd.Int32("response header")
	if err != nil {
		return nil, wrapJava(err)
	}
	switch {
	case uint32(head) == 0xACED0005:
		return readV1(r, maxSize, head)
	case head == discovery.ProtocolV2:
		return readV2(rd)
	}
	return nil, fmt.Errorf("%w: response starts %08x: neither a Java object stream (version 1) nor version 2", ErrVersion, uint32(head))
}

func readV1(r io.Reader, maxSize int64, head int32) (*Response, error) {
	// The Java stream reader wants the header it already took.
	rd := javaio.NewReader(io.MultiReader(bytes.NewReader(appendU32(nil, uint32(head))), r), maxSize)
	m, err := javaio.ReadMarshalled(rd)
	if err != nil {
		return nil, fmt.Errorf("registrar proxy: %w", wrapJava(err))
	}
	block := javaio.NewReader(javaio.NewBlockData(rd), maxSize)
	n, err := block.Int32("group count")
	if err != nil {
		return nil, wrapJava(err)
	}
	groups, err := readGroups(block, n)
	if err != nil {
		return nil, err
	}
	return &Response{
		Version:   discovery.ProtocolV1,
		Groups:    groups,
		Registrar: ReadRegistrar(m),
	}, nil
}

func readV2(rd *javaio.Reader) (*Response, error) {
	f, err := rd.Int64("format ID")
	if err != nil {
		return nil, wrapJava(err)
	}
	p := &Response{Version: discovery.ProtocolV2, Format: discovery.FormatID(f)}
	switch p.Format {
	case discovery.PlaintextFormat:
	case discovery.NullFormat:
		return p, ErrNoFormat
	default:
		return p, &discovery.FormatError{ID: p.Format}
	}
	if p.Host, err = rd.UTF("host"); err != nil {
		return nil, wrapJava(err)
	}
	port, err := rd.Uint16("port")
	if err != nil {
		return nil, wrapJava(err)
	}
	p.Port = int(port)
	n, err := rd.Int32("group count")
	if err != nil {
		return nil, wrapJava(err)
	}
	if p.Groups, err = readGroups(rd, n); err != nil {
		return nil, err
	}
	m, err := javaio.ReadMarshalled(rd)
	if err != nil {
		return nil, fmt.Errorf("registrar proxy: %w", wrapJava(err))
	}
	p.Registrar = ReadRegistrar(m)
	return p, nil
}

func readGroups(rd *javaio.Reader, n int32) ([]string, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: group count %d is negative", ErrMalformed, n)
	}
	groups := []string{}
	// Appended one by one: a hostile count costs only what the stream
	// actually delivers, and the reader's limit ends that.
	for i := int32(0); i < n; i++ {
		g, err := rd.UTF("group")
		if err != nil {
			return nil, fmt.Errorf("group %d of %d: %w", i+1, n, wrapJava(err))
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// wrapJava marks errors about malformed Java data as ErrMalformed too.
func wrapJava(err error) error {
	if errors.Is(err, javaio.ErrMalformed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return err
}

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendU64(b []byte, v uint64) []byte {
	return appendU32(appendU32(b, uint32(v>>32)), uint32(v))
}
