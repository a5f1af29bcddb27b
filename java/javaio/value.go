package javaio

import (
	"fmt"
	"strings"
)

// Value is one value of a Java object stream, as Decoder builds it and
// Encoder writes it:
//
//   - nil: null
//   - string: a java.lang.String
//   - *Object, *Array, *Enum, *ClassObject: objects, arrays, enum
//     constants and java.lang.Class objects
//   - Block: block data, only among a class's custom writeObject data
//   - bool, int8, uint16 (char), int16, int32, int64, float32, float64:
//     primitive field values
//
// Objects are pointers so that a graph keeps its shape: a value reached
// twice is the same pointer, and Encoder writes it once and refers back
// to it after that (cycles included).
type Value = any

// Block is block data: the primitive values a writeObject method wrote,
// as raw big-endian bytes.
type Block []byte

// Class is a class descriptor. For a dynamic proxy class, Proxy is set and
// Interfaces names its interfaces; Name, SUID, Flags and Fields are then
// unused.
type Class struct {
	Name   string
	SUID   int64
	Flags  byte
	Fields []Field

	Proxy      bool
	Interfaces []string

	Super *Class
}

// Field is a serializable field: its type code (B C D F I J S Z, L for an
// object, [ for an array), name and, for L and [, its JVM type signature
// ("Ljava/lang/String;").
type Field struct {
	Code byte
	Name string
	Type string
}

// Class flags, as in ObjectStreamConstants.
const (
	FlagWriteMethod    = scWriteMethod
	FlagSerializable   = scSerializable
	FlagExternalizable = scExternalizable
	FlagBlockData      = scBlockData
	FlagEnum           = 0x10
)

// IsA reports whether c is the named class or has it as a superclass.
func (c *Class) IsA(name string) bool {
	for ; c != nil; c = c.Super {
		if !c.Proxy && c.Name == name {
			return true
		}
	}
	return false
}

// String names the class for messages.
func (c *Class) String() string {
	if c == nil {
		return "<null class>"
	}
	if c.Proxy {
		return "proxy[" + strings.Join(c.Interfaces, ",") + "]"
	}
	return c.Name
}

// chain returns the class and its superclasses, topmost first: the order
// of an object's class data.
func (c *Class) chain() []*Class {
	var n int
	for k := c; k != nil; k = k.Super {
		n++
	}
	out := make([]*Class, n)
	for k := c; k != nil; k = k.Super {
		n--
		out[n] = k
	}
	return out
}

// Object is a serializable object: one ClassData per class of its
// hierarchy, topmost superclass first.
type Object struct {
	Class *Class
	Data  []ClassData
}

// ClassData is what one class of an object's hierarchy wrote: its field
// values in descriptor order and, for classes with a writeObject method
// (or externalizable ones), the custom data that followed.
type ClassData struct {
	Fields []Value
	Custom []Value
}

// NewObject returns an object of class c with every field at its zero
// value (null, 0, false).
func NewObject(c *Class) *Object {
	chain := c.chain()
	o := &Object{Class: c, Data: make([]ClassData, len(chain))}
	for i, k := range chain {
		o.Data[i].Fields = make([]Value, len(k.Fields))
		for j, f := range k.Fields {
			o.Data[i].Fields[j] = zero(f.Code)
		}
	}
	return o
}

func zero(code byte) Value {
	switch code {
	case 'Z':
		return false
	case 'B':
		return int8(0)
	case 'C':
		return uint16(0)
	case 'S':
		return int16(0)
	case 'I':
		return int32(0)
	case 'J':
		return int64(0)
	case 'F':
		return float32(0)
	case 'D':
		return float64(0)
	}
	return nil
}

// Get returns the value of the named field, looking from the object's own
// class up to its topmost superclass, and whether there is such a field.
func (o *Object) Get(name string) (Value, bool) {
	chain := o.Class.chain()
	for i := len(chain) - 1; i >= 0; i-- {
		for j, f := range chain[i].Fields {
			if f.Name == name && i < len(o.Data) && j < len(o.Data[i].Fields) {
				return o.Data[i].Fields[j], true
			}
		}
	}
	return nil, false
}

// Set sets the named field (the most derived class's, if several have
// one) and panics if there is none: callers set fields of classes they
// describe themselves.
func (o *Object) Set(name string, v Value) *Object {
	chain := o.Class.chain()
	for i := len(chain) - 1; i >= 0; i-- {
		for j, f := range chain[i].Fields {
			if f.Name == name {
				o.Data[i].Fields[j] = v
				return o
			}
		}
	}
	panic(fmt.Sprintf("javaio: class %s has no field %q", o.Class, name))
}

// Custom returns the custom data written by the named class of the
// object's hierarchy.
func (o *Object) Custom(class string) []Value {
	for i, k := range o.Class.chain() {
		if k.Name == class && i < len(o.Data) {
			return o.Data[i].Custom
		}
	}
	return nil
}

// SetCustom sets the custom data of the named class of the object's
// hierarchy, and panics if the object has no such class.
func (o *Object) SetCustom(class string, data ...Value) *Object {
	for i, k := range o.Class.chain() {
		if k.Name == class {
			o.Data[i].Custom = data
			return o
		}
	}
	panic(fmt.Sprintf("javaio: class %s is not a %s", o.Class, class))
}

// Array is an array. A primitive array keeps its elements as raw
// big-endian bytes in Prim; an array of objects keeps them in Elems.
type Array struct {
	Class *Class
	Elems []Value
	Prim  []byte
}

// Len returns the number of elements.
func (a *Array) Len() int {
	if size := a.elemSize(); size > 0 {
		return len(a.Prim) / size
	}
	return len(a.Elems)
}

func (a *Array) elemSize() int {
	if a.Class == nil || len(a.Class.Name) < 2 {
		return 0
	}
	return primSize(a.Class.Name[1])
}

// Enum is an enum constant.
type Enum struct {
	Class *Class
	Name  string
}

// ClassObject is a java.lang.Class object.
type ClassObject struct {
	Class *Class
}
