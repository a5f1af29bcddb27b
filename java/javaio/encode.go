package javaio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// maxBlock is the block data size Java writes; longer runs of primitives
// are split into several blocks.
const maxBlock = 1024

// Encoder writes a Java object stream the way an ObjectOutputStream does.
// Objects written twice (the same pointer) and strings written twice are
// written once and referred back to after that, so any graph a Decoder
// built, cycles included, can be written into a new stream with handles
// of its own.
type Encoder struct {
	buf []byte
	// block holds top-level primitives until an object or the end.
	block   []byte
	handles map[any]int32
	classes map[string]classHandle
	next    int32
	depth   int
	// codebase: every class descriptor carries a null codebase
	// annotation, as net.jini.io.MarshalOutputStream writes them (JERI
	// calls); a plain ObjectOutputStream writes none (MarshalledInstance
	// contents).
	codebase bool
}

// NewEncoder returns an encoder that has written the stream header. With
// codebase set, class descriptors carry a null codebase annotation as in
// Jini ERI call streams.
func NewEncoder(codebase bool) *Encoder {
	e := &Encoder{
		handles:  make(map[any]int32),
		classes:  make(map[string]classHandle),
		codebase: codebase,
	}
	e.buf = binary.BigEndian.AppendUint16(e.buf, streamMagic)
	e.buf = binary.BigEndian.AppendUint16(e.buf, streamVersion)
	return e
}

// Bytes returns the stream written so far, pending primitives included.
func (e *Encoder) Bytes() []byte {
	e.flush()
	return e.buf
}

// WriteBool, WriteInt and the others write primitives as block data.
func (e *Encoder) WriteBool(v bool) {
	var b byte
	if v {
		b = 1
	}
	e.block = append(e.block, b)
}

func (e *Encoder) WriteInt(v int32)  { e.block = binary.BigEndian.AppendUint32(e.block, uint32(v)) }
func (e *Encoder) WriteLong(v int64) { e.block = binary.BigEndian.AppendUint64(e.block, uint64(v)) }

func (e *Encoder) flush() {
	e.buf = appendBlocks(e.buf, e.block)
	e.block = e.block[:0]
}

func appendBlocks(dst, b []byte) []byte {
	for len(b) > 0 {
		n := min(len(b), maxBlock)
		if n <= 0xFF {
			dst = append(dst, tcBlockData, byte(n))
		} else {
			dst = append(dst, tcBlockDataLong)
			dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		}
		dst = append(dst, b[:n]...)
		b = b[n:]
	}
	return dst
}

// WriteObject writes v, which must be made of the types Value lists.
func (e *Encoder) WriteObject(v Value) error {
	e.flush()
	return e.content(v)
}

func (e *Encoder) newHandle(key any) {
	e.handles[key] = e.next
	e.next++
}

func (e *Encoder) ref(h int32) {
	e.buf = append(e.buf, tcReference)
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(baseHandle+h))
}

var errTooDeep = errors.New("object graph nested too deep")

func (e *Encoder) content(v Value) error {
	e.depth++
	defer func() { e.depth-- }()
	if e.depth > maxDepth {
		return errTooDeep
	}
	if v == nil {
		e.buf = append(e.buf, tcNull)
		return nil
	}
	switch v.(type) {
	case string, *Object, *Array, *Enum, *ClassObject:
		// Only these are hashable and shared; a Block would panic.
		if h, ok := e.handles[v]; ok {
			e.ref(h)
			return nil
		}
	}
	switch v := v.(type) {
	case string:
		e.newHandle(v)
		return e.str(v)
	case *Object:
		if v == nil {
			e.buf = append(e.buf, tcNull)
			return nil
		}
		return e.object(v)
	case *Array:
		if v == nil {
			e.buf = append(e.buf, tcNull)
			return nil
		}
		return e.array(v)
	case *Enum:
		e.buf = append(e.buf, tcEnum)
		if err := e.classDesc(v.Class); err != nil {
			return err
		}
		e.newHandle(v)
		return e.content(v.Name)
	case *ClassObject:
		e.buf = append(e.buf, tcClass)
		if err := e.classDesc(v.Class); err != nil {
			return err
		}
		e.newHandle(v)
		return nil
	}
	return fmt.Errorf("javaio: cannot write a %T as an object", v)
}

func (e *Encoder) str(s string) error {
	n := ModifiedUTF8Len(s)
	if n <= 0xFFFF {
		e.buf = append(e.buf, tcString)
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(n))
	} else {
		e.buf = append(e.buf, tcLongString)
		e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(n))
	}
	e.buf = AppendModifiedUTF8(e.buf, s)
	return nil
}

func (e *Encoder) classDesc(c *Class) error {
	if c == nil {
		e.buf = append(e.buf, tcNull)
		return nil
	}
	if h, ok := e.handles[c]; ok {
		e.ref(h)
		return nil
	}
	if !c.Proxy {
		// Descriptors of one class from different graphs are one.
		if h, ok := e.classes[c.Name]; ok && sameClass(h.c, c) {
			e.ref(h.h)
			return nil
		}
	}
	e.depth++
	defer func() { e.depth-- }()
	if e.depth > maxDepth {
		return errTooDeep
	}
	if c.Proxy {
		e.buf = append(e.buf, tcProxyClassDesc)
		e.newHandle(c)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(len(c.Interfaces)))
		for _, name := range c.Interfaces {
			var err error
			if e.buf, err = AppendUTF(e.buf, name); err != nil {
				return err
			}
		}
	} else {
		e.buf = append(e.buf, tcClassDesc)
		var err error
		if e.buf, err = AppendUTF(e.buf, c.Name); err != nil {
			return err
		}
		e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(c.SUID))
		e.newHandle(c)
		e.classes[c.Name] = classHandle{c, e.handles[c]}
		e.buf = append(e.buf, c.Flags)
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(len(c.Fields)))
		for _, f := range c.Fields {
			e.buf = append(e.buf, f.Code)
			if e.buf, err = AppendUTF(e.buf, f.Name); err != nil {
				return err
			}
			if f.Code == 'L' || f.Code == '[' {
				if err := e.content(f.Type); err != nil {
					return err
				}
			}
		}
	}
	if e.codebase {
		e.buf = append(e.buf, tcNull)
	}
	e.buf = append(e.buf, tcEndBlockData)
	return e.classDesc(c.Super)
}

type classHandle struct {
	c *Class
	h int32
}

// sameClass reports whether two descriptors describe one class alike,
// superclasses included.
func sameClass(a, b *Class) bool {
	for n := 0; a != b; n++ {
		if a == nil || b == nil || n > maxDepth || a.Proxy || b.Proxy ||
			a.Name != b.Name || a.SUID != b.SUID || a.Flags != b.Flags || !slices.Equal(a.Fields, b.Fields) {
			return false
		}
		a, b = a.Super, b.Super
	}
	return true
}

func (e *Encoder) object(o *Object) error {
	if o.Class == nil {
		return errors.New("javaio: object without a class")
	}
	e.buf = append(e.buf, tcObject)
	if err := e.classDesc(o.Class); err != nil {
		return err
	}
	e.newHandle(o)
	chain := o.Class.chain()
	if len(chain) != len(o.Data) {
		return fmt.Errorf("javaio: object of %s has data for %d classes, its hierarchy has %d", o.Class, len(o.Data), len(chain))
	}
	for i, k := range chain {
		cd := o.Data[i]
		if k.Flags&scExternalizable != 0 {
			if err := e.custom(cd.Custom); err != nil {
				return err
			}
			continue
		}
		if len(cd.Fields) != len(k.Fields) {
			return fmt.Errorf("javaio: object of %s has %d values for the %d fields of %s", o.Class, len(cd.Fields), len(k.Fields), k)
		}
		for j, f := range k.Fields {
			if err := e.field(f, cd.Fields[j]); err != nil {
				return fmt.Errorf("field %s.%s: %w", k, f.Name, err)
			}
		}
		if k.Flags&scWriteMethod != 0 {
			if err := e.custom(cd.Custom); err != nil {
				return err
			}
		}
	}
	return nil
}

// custom writes a class's writeObject data and its end marker.
func (e *Encoder) custom(data []Value) error {
	for _, v := range data {
		if b, ok := v.(Block); ok {
			e.buf = appendBlocks(e.buf, b)
			continue
		}
		if err := e.content(v); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, tcEndBlockData)
	return nil
}

func (e *Encoder) field(f Field, v Value) error {
	switch f.Code {
	case 'L', '[':
		return e.content(v)
	case 'Z':
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("javaio: %T for a boolean", v)
		}
		if b {
			e.buf = append(e.buf, 1)
		} else {
			e.buf = append(e.buf, 0)
		}
		return nil
	case 'F':
		x, ok := v.(float32)
		if !ok {
			return fmt.Errorf("javaio: %T for a float", v)
		}
		e.buf = binary.BigEndian.AppendUint32(e.buf, math.Float32bits(x))
		return nil
	case 'D':
		x, ok := v.(float64)
		if !ok {
			return fmt.Errorf("javaio: %T for a double", v)
		}
		e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(x))
		return nil
	}
	var x int64
	switch n := v.(type) {
	case int8:
		x = int64(n)
	case uint16:
		x = int64(n)
	case int16:
		x = int64(n)
	case int32:
		x = int64(n)
	case int64:
		x = n
	case int:
		x = int64(n)
	default:
		return fmt.Errorf("javaio: %T for a field of type %c", v, f.Code)
	}
	switch f.Code {
	case 'B':
		e.buf = append(e.buf, byte(x))
	case 'C', 'S':
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(x))
	case 'I':
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(x))
	case 'J':
		e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(x))
	default:
		return fmt.Errorf("javaio: field type code %q", f.Code)
	}
	return nil
}

func (e *Encoder) array(a *Array) error {
	if a.Class == nil || len(a.Class.Name) < 2 || a.Class.Name[0] != '[' {
		return fmt.Errorf("javaio: array of class %s", a.Class)
	}
	e.buf = append(e.buf, tcArray)
	if err := e.classDesc(a.Class); err != nil {
		return err
	}
	e.newHandle(a)
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(a.Len()))
	if a.elemSize() > 0 {
		e.buf = append(e.buf, a.Prim...)
		return nil
	}
	for _, v := range a.Elems {
		if err := e.content(v); err != nil {
			return err
		}
	}
	return nil
}

// Encode writes v as a whole object stream.
func Encode(v Value, codebase bool) ([]byte, error) {
	e := NewEncoder(codebase)
	if err := e.WriteObject(v); err != nil {
		return nil, err
	}
	return e.Bytes(), nil
}
