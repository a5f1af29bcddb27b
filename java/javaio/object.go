package javaio

import (
	"fmt"
)

// Type codes of the Java object serialization stream protocol.
const (
	tcNull           = 0x70
	tcReference      = 0x71
	tcClassDesc      = 0x72
	tcObject         = 0x73
	tcString         = 0x74
	tcArray          = 0x75
	tcClass          = 0x76
	tcBlockData      = 0x77
	tcEndBlockData   = 0x78
	tcReset          = 0x79
	tcBlockDataLong  = 0x7A
	tcException      = 0x7B
	tcLongString     = 0x7C
	tcProxyClassDesc = 0x7D
	tcEnum           = 0x7E

	streamMagic   = 0xACED
	streamVersion = 5
	baseHandle    = 0x7E0000

	scWriteMethod    = 0x01
	scSerializable   = 0x02
	scExternalizable = 0x04
	scBlockData      = 0x08
)

// Limits that keep a hostile stream from recursing or indexing without
// bound; the byte limit of the Reader bounds everything else.
const (
	maxDepth   = 64
	maxHandles = 1 << 16
)

type classDesc struct {
	name   string
	flags  byte
	fields []byte // one type code per field, in stream order
	super  *classDesc
}

// handle is an entry of the stream's handle table: either a class
// descriptor (needed to read later objects of that class) or anything else.
type handle struct {
	desc  *classDesc
	str   string
	isStr bool
}

// skimmer walks one object stream far enough to know where each object
// ends, keeping only what later parts of the stream may refer to.
type skimmer struct {
	r       *Reader
	handles []handle
	depth   int
}

// ReadMarshalled reads a Java object stream header and the one object that
// follows it, and returns those bytes exactly as they were read. This is how
// jinid keeps a registrar proxy from a Java lookup service: opaque, but
// whole. The reader is left just after the object, so block data written to
// the same stream (the groups of a v1 unicast response) can follow.
func ReadMarshalled(r *Reader) ([]byte, error) {
	r.startCapture()
	s := skimmer{r: r}
	err := s.header()
	if err == nil {
		err = s.content(false)
	}
	raw := r.stopCapture()
	if err != nil {
		return nil, fmt.Errorf("reading serialized object (%d bytes in): %w", len(raw), err)
	}
	return raw, nil
}

func (s *skimmer) header() error {
	magic, err := s.r.Uint16("stream magic")
	if err != nil {
		return err
	}
	if magic != streamMagic {
		return fmt.Errorf("%w: stream magic is 0x%04x, want 0x%04x", ErrMalformed, magic, streamMagic)
	}
	v, err := s.r.Uint16("stream version")
	if err != nil {
		return err
	}
	if v != streamVersion {
		return fmt.Errorf("%w: stream version %d, want %d", ErrMalformed, v, streamVersion)
	}
	return nil
}

func (s *skimmer) newHandle(h handle) (int, error) {
	if len(s.handles) >= maxHandles {
		return 0, fmt.Errorf("%w: more than %d objects in one stream", ErrTooLarge, maxHandles)
	}
	s.handles = append(s.handles, h)
	return len(s.handles) - 1, nil
}

func (s *skimmer) ref() (handle, error) {
	h, err := s.r.Int32("object reference")
	if err != nil {
		return handle{}, err
	}
	i := int64(h) - baseHandle
	if i < 0 || i >= int64(len(s.handles)) {
		return handle{}, fmt.Errorf("%w: reference to handle 0x%x, only %d handles assigned", ErrMalformed, uint32(h), len(s.handles))
	}
	return s.handles[i], nil
}

// content reads one object; allowBlock also accepts block data, as inside
// class and object annotations.
func (s *skimmer) content(allowBlock bool) error {
	_, err := s.object(allowBlock)
	return err
}

// object reads one object and returns its handle entry (zero for null and
// for block data).
func (s *skimmer) object(allowBlock bool) (handle, error) {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxDepth {
		return handle{}, fmt.Errorf("%w: objects nested more than %d deep", ErrMalformed, maxDepth)
	}
	tc, err := s.r.Uint8("type code")
	if err != nil {
		return handle{}, err
	}
	switch tc {
	case tcNull:
		return handle{}, nil
	case tcReference:
		return s.ref()
	case tcClassDesc, tcProxyClassDesc:
		d, err := s.newClassDesc(tc)
		return handle{desc: d}, err
	case tcObject:
		return handle{}, s.newObject()
	case tcString, tcLongString:
		str, err := s.newString(tc)
		return handle{str: str, isStr: true}, err
	case tcArray:
		return handle{}, s.newArray()
	case tcClass:
		if _, err := s.classDesc(); err != nil {
			return handle{}, err
		}
		_, err := s.newHandle(handle{})
		return handle{}, err
	case tcEnum:
		if _, err := s.classDesc(); err != nil {
			return handle{}, err
		}
		if _, err := s.newHandle(handle{}); err != nil {
			return handle{}, err
		}
		h, err := s.object(false)
		if err == nil && !h.isStr {
			err = fmt.Errorf("%w: enum constant name is not a string", ErrMalformed)
		}
		return handle{}, err
	case tcReset:
		s.handles = s.handles[:0]
		return s.object(allowBlock)
	case tcException:
		s.handles = s.handles[:0]
		if _, err := s.object(false); err != nil {
			return handle{}, err
		}
		s.handles = s.handles[:0]
		return handle{}, nil
	case tcBlockData, tcBlockDataLong:
		if !allowBlock {
			return handle{}, fmt.Errorf("%w: block data where an object was expected", ErrMalformed)
		}
		return handle{}, s.skipBlock(tc)
	default:
		return handle{}, fmt.Errorf("%w: unknown type code 0x%02x", ErrMalformed, tc)
	}
}

func (s *skimmer) skipBlock(tc byte) error {
	var n int64
	if tc == tcBlockData {
		b, err := s.r.Uint8("block data length")
		if err != nil {
			return err
		}
		n = int64(b)
	} else {
		l, err := s.r.Int32("block data length")
		if err != nil {
			return err
		}
		n = int64(l)
	}
	return s.r.Skip(n, "block data")
}

func (s *skimmer) newString(tc byte) (string, error) {
	if tc == tcString {
		str, err := s.r.UTF("string")
		if err != nil {
			return "", err
		}
		_, err = s.newHandle(handle{str: str, isStr: true})
		return str, err
	}
	n, err := s.r.Int64("long string length")
	if err != nil {
		return "", err
	}
	if _, err := s.newHandle(handle{isStr: true}); err != nil {
		return "", err
	}
	// Long strings are only ever skipped: no class or field name is that
	// long, so their text is not needed.
	return "", s.r.Skip(n, "long string")
}

// classDesc reads a class descriptor where one is required: a new one, a
// reference to an earlier one, or null.
func (s *skimmer) classDesc() (*classDesc, error) {
	tc, err := s.r.Uint8("class descriptor type code")
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		h, err := s.ref()
		if err != nil {
			return nil, err
		}
		if h.desc == nil {
			return nil, fmt.Errorf("%w: reference to a non-class-descriptor where a class descriptor was expected", ErrMalformed)
		}
		return h.desc, nil
	case tcClassDesc, tcProxyClassDesc:
		return s.newClassDesc(tc)
	default:
		return nil, fmt.Errorf("%w: type code 0x%02x where a class descriptor was expected", ErrMalformed, tc)
	}
}

func (s *skimmer) newClassDesc(tc byte) (*classDesc, error) {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxDepth {
		return nil, fmt.Errorf("%w: class descriptors nested more than %d deep", ErrMalformed, maxDepth)
	}
	d := &classDesc{}
	if tc == tcProxyClassDesc {
		if _, err := s.newHandle(handle{desc: d}); err != nil {
			return nil, err
		}
		n, err := s.r.Int32("proxy interface count")
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, fmt.Errorf("%w: proxy interface count %d is negative", ErrMalformed, n)
		}
		for i := int32(0); i < n; i++ {
			if _, err := s.r.UTF("proxy interface name"); err != nil {
				return nil, err
			}
		}
		d.flags = scSerializable
	} else {
		name, err := s.r.UTF("class name")
		if err != nil {
			return nil, err
		}
		d.name = name
		if err := s.r.Skip(8, "serialVersionUID"); err != nil {
			return nil, err
		}
		if _, err := s.newHandle(handle{desc: d}); err != nil {
			return nil, err
		}
		if d.flags, err = s.r.Uint8("class flags"); err != nil {
			return nil, err
		}
		nf, err := s.r.Uint16("field count")
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(nf); i++ {
			code, err := s.r.Uint8("field type code")
			if err != nil {
				return nil, err
			}
			if _, err := s.r.UTF("field name"); err != nil {
				return nil, err
			}
			switch code {
			case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
			case '[', 'L':
				h, err := s.object(false)
				if err != nil {
					return nil, err
				}
				if !h.isStr {
					return nil, fmt.Errorf("%w: field type name of class %q is not a string", ErrMalformed, d.name)
				}
			default:
				return nil, fmt.Errorf("%w: field type code 0x%02x in class %q", ErrMalformed, code, d.name)
			}
			d.fields = append(d.fields, code)
		}
	}
	if err := s.annotation(); err != nil {
		return nil, err
	}
	super, err := s.classDesc()
	if err != nil {
		return nil, err
	}
	d.super = super
	return d, nil
}

// annotation reads contents up to TC_ENDBLOCKDATA.
func (s *skimmer) annotation() error {
	for {
		tc, err := s.peekEnd()
		if err != nil {
			return err
		}
		if tc {
			return nil
		}
		if err := s.content(true); err != nil {
			return err
		}
	}
}

// peekEnd consumes TC_ENDBLOCKDATA if it comes next. The Reader cannot
// unread, so any other type code is handed to the object parser through a
// one-byte replay.
func (s *skimmer) peekEnd() (bool, error) {
	tc, err := s.r.Uint8("annotation")
	if err != nil {
		return false, err
	}
	if tc == tcEndBlockData {
		return true, nil
	}
	s.r.unread(tc)
	return false, nil
}

func (s *skimmer) newObject() error {
	d, err := s.classDesc()
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("%w: object with a null class descriptor", ErrMalformed)
	}
	if _, err := s.newHandle(handle{}); err != nil {
		return err
	}
	// Class data is written from the topmost superclass down.
	var chain []*classDesc
	for c := d; c != nil; c = c.super {
		if len(chain) >= maxDepth {
			return fmt.Errorf("%w: class hierarchy deeper than %d", ErrMalformed, maxDepth)
		}
		chain = append(chain, c)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		switch {
		case c.flags&scExternalizable != 0:
			if c.flags&scBlockData == 0 {
				return fmt.Errorf("%w: externalizable class %q written without block data cannot be skipped", ErrMalformed, c.name)
			}
			if err := s.annotation(); err != nil {
				return err
			}
		default:
			if err := s.values(c); err != nil {
				return err
			}
			if c.flags&scWriteMethod != 0 {
				if err := s.annotation(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *skimmer) values(c *classDesc) error {
	for _, code := range c.fields {
		if n := primSize(code); n > 0 {
			if err := s.r.Skip(int64(n), "field value"); err != nil {
				return err
			}
			continue
		}
		if err := s.content(false); err != nil {
			return err
		}
	}
	return nil
}

func (s *skimmer) newArray() error {
	d, err := s.classDesc()
	if err != nil {
		return err
	}
	if d == nil || len(d.name) < 2 || d.name[0] != '[' {
		return fmt.Errorf("%w: array with a class descriptor that is not an array class", ErrMalformed)
	}
	if _, err := s.newHandle(handle{}); err != nil {
		return err
	}
	n, err := s.r.Int32("array length")
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%w: array length %d is negative", ErrMalformed, n)
	}
	if size := primSize(d.name[1]); size > 0 {
		return s.r.Skip(int64(n)*int64(size), "array elements")
	}
	for i := int32(0); i < n; i++ {
		if err := s.content(false); err != nil {
			return err
		}
	}
	return nil
}

func primSize(code byte) int {
	switch code {
	case 'B', 'Z':
		return 1
	case 'C', 'S':
		return 2
	case 'F', 'I':
		return 4
	case 'D', 'J':
		return 8
	}
	return 0
}
