package onnx

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/apr-go/apr/lib/model"
	pb "github.com/apr-go/apr/lib/onnx/internal/onnxpb"
)

// The import reads ONNX's protobuf as a stream, field by field, into the small types
// below rather than into generated messages: a length is read and checked against
// the bytes its enclosing message has left (and the input's size or MaxSize) before
// anything is allocated for it, fields the import does not use are skipped without
// being kept, weights are decoded straight into float32, and the input is never held
// whole. Memory is then about the weights' float32 size, whatever a hostile file
// declares.

// Caps of the import (docs/SECURITY.md).
const (
	// MaxSize caps an ONNX file: 256 MiB, 64M float32 weights (one 8192x8192 layer).
	// The import is for the multilayer perceptrons torch.onnx.export writes,
	// kilobytes to a few MiB (testdata's digits MLP is 10 KB); torch writes a model
	// over 2 GiB with external data, which the import refuses anyway. The weights are
	// held once, as float32 (MatMul's transposed in place, the APR tensors encoded as
	// they are written), so a file at the cap imports under ulimit -v 1,600,585 KiB,
	// inside the 2,000,000 of pipelines' hostile-input test.
	MaxSize = 256 << 20
	// MaxEntries caps the list entries of a file (nodes, their inputs, outputs and
	// attributes, initializers, graph inputs and outputs, dimensions, opsets and
	// metadata entries, all counted together): each costs tens of bytes of memory for
	// as few as two bytes of file. An MLP of model.MaxNeuralLayers layers has fewer
	// than 50,000.
	MaxEntries = 1 << 18
	// MaxMetadata caps the metadata_props of a file, all entries together: 1 MiB.
	// Their values are read as JSON, which costs about 30 times their size in memory
	// (a 200 MiB array took over 5 GB and a minute); the metadata apr's Export
	// writes, and other producers', is kilobytes.
	MaxMetadata = 1 << 20
	// MaxName caps a name (of a node, an operator, a tensor, an attribute, an input or
	// output, a domain, the producer): 4 KiB, as lib/npy caps an .npz member's. torch's
	// are tens of bytes.
	MaxName = 4096
	// MaxDims caps the dimensions of a tensor or of a graph input's shape (an MLP's
	// have one or two).
	MaxDims = 64
)

// What the import reads of ONNX's messages (field names and numbers are ONNX's).
type (
	modelMsg struct {
		hasIR    bool
		irVer    int64
		producer [2]string // producer_name, producer_version
		graph    *graphMsg
		opsets   []opsetMsg
		props    [][2]string // metadata_props: key, value
	}
	opsetMsg struct {
		domain  string
		version int64
	}
	graphMsg struct {
		nodes           []*nodeMsg
		inits           []*tensorMsg
		inputs, outputs []*valueMsg
	}
	nodeMsg struct {
		inputs, outputs      []string
		name, opType, domain string
		attrs                []attrMsg
	}
	attrMsg struct {
		name       string
		f          float32
		i          int64
		typ        int64 // AttributeProto.type, 0 when absent
		hasF, hasI bool
	}
	// valueMsg is a ValueInfoProto; tensor is false unless its type is a tensor type.
	valueMsg struct {
		name     string
		tensor   bool
		elemType int32
		hasShape bool
		dims     []dimMsg
	}
	dimMsg struct {
		value    int64
		hasValue bool // else a symbolic dim_param, or nothing
	}
	// tensorMsg is an initializer: the values of a float or double one decoded to
	// float32; the data of other types is skipped unread.
	tensorMsg struct {
		name     string
		dims     []int64
		dataType int32
		external bool
		v        []float32
	}
)

// elemSize is the bytes an element of ONNX's fixed-size data types takes in raw_data.
var elemSize = map[int32]int64{1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 14: 8, 15: 16, 16: 2, 17: 1, 18: 1, 19: 1, 20: 1}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// decoder reads protobuf fields from a stream, counting bytes for the errors.
type decoder struct {
	r       *bufio.Reader
	pos     int64 // bytes consumed
	limit   int64 // the input's size when known, else MaxSize
	sized   bool
	entries int
	props   int64 // bytes of metadata_props
	buf     []byte
}

// wireError is a malformed or truncated protobuf: ErrNotONNX.
type wireError struct {
	off   int64
	field string
	msg   string
}

func (e *wireError) Error() string {
	return fmt.Sprintf("%v (truncated or damaged protobuf): byte %d, %s: %s", ErrNotONNX, e.off, e.field, e.msg)
}

func (e *wireError) Unwrap() error { return ErrNotONNX }

func (d *decoder) wireErr(off int64, field, format string, args ...any) error {
	return &wireError{off: off, field: field, msg: fmt.Sprintf(format, args...)}
}

// readErr turns the end of the input inside a field into a truncation error.
func (d *decoder) readErr(field string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return d.wireErr(d.pos, field, "the input ends inside this field (truncated)")
	}
	return fmt.Errorf("byte %d, %s: %w", d.pos, field, err)
}

func (d *decoder) varint(field string) (uint64, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		b, err := d.r.ReadByte()
		if err != nil {
			return 0, d.readErr(field, err)
		}
		d.pos++
		if i == 9 && b > 1 {
			return 0, d.wireErr(d.pos-1, field, "a varint of more than 64 bits")
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, d.wireErr(d.pos, field, "a varint of more than 10 bytes")
}

func (d *decoder) full(p []byte, field string) error {
	n, err := io.ReadFull(d.r, p)
	d.pos += int64(n)
	if err != nil {
		return d.readErr(field, err)
	}
	return nil
}

// fixed reads n bytes from the buffer, without a copy (they are valid until the next
// read): an unpacked float costs no allocation.
func (d *decoder) fixed(n int, field string) ([]byte, error) {
	b, err := d.r.Peek(n)
	k, _ := d.r.Discard(len(b))
	d.pos += int64(k)
	if err != nil {
		return nil, d.readErr(field, err)
	}
	return b, nil
}

func (d *decoder) fixed32(field string) (uint32, error) {
	b, err := d.fixed(4, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) fixed64(field string) (uint64, error) {
	b, err := d.fixed(8, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// length reads the length of a length-delimited field and checks it against what
// the enclosing message (ending at end) has left, before anything is read for it.
func (d *decoder) length(end int64, field string) (int64, error) {
	at := d.pos
	u, err := d.varint(field)
	if err != nil {
		return 0, err
	}
	if left := end - d.pos; u > uint64(left) {
		switch {
		case end != d.limit:
			return 0, d.wireErr(at, field, "%d bytes, but its message has %d left", u, max(left, 0))
		case d.sized:
			return 0, d.wireErr(at, field, "%d bytes, but the input has %d left", u, max(left, 0))
		}
		return 0, d.wireErr(at, field, "%d bytes, past the cap of %d bytes for an ONNX file", u, MaxSize)
	}
	return int64(u), nil
}

func (d *decoder) skipN(n int64, field string) error {
	k, err := d.r.Discard(int(n))
	d.pos += int64(k)
	if err != nil {
		return d.readErr(field, err)
	}
	return nil
}

// skip passes over a field the import does not use (fields has checked its wire
// type is one of the four).
func (d *decoder) skip(typ int, end int64, field string) error {
	var err error
	switch typ {
	case wireVarint:
		_, err = d.varint(field)
	case wireFixed64:
		err = d.skipN(8, field)
	case wireFixed32:
		err = d.skipN(4, field)
	case wireBytes:
		var n int64
		if n, err = d.length(end, field); err == nil {
			err = d.skipN(n, field)
		}
	}
	return err
}

// entry counts one list entry against MaxEntries.
func (d *decoder) entry(field string) error {
	if d.entries++; d.entries > MaxEntries {
		return fmt.Errorf("byte %d, %s: more than %d entries (nodes, names, dimensions, ...), the cap of the import", d.pos, field, MaxEntries)
	}
	return nil
}

// fields reads the fields of a message ending at end (the top level: at the end of
// the input), calling f with each field's number, wire type and name (path.number);
// f must consume the field. top is the ModelProto, whose end is the input's.
func (d *decoder) fields(end int64, top bool, path string, f func(num, typ int, at int64) error) error {
	for {
		if top {
			if _, err := d.r.Peek(1); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("byte %d: %w", d.pos, err)
			}
			if d.pos >= end {
				if d.sized {
					return d.wireErr(d.pos, path, "the input is longer than its size of %d bytes", d.limit)
				}
				return fmt.Errorf("more than %d bytes, the cap of an ONNX file (docs/SECURITY.md)", MaxSize)
			}
		} else if d.pos >= end {
			return nil
		}
		at := d.pos
		tag, err := d.varint(path)
		if err != nil {
			return err
		}
		num, typ := tag>>3, int(tag&7)
		if num == 0 || num > 1<<29-1 {
			return d.wireErr(at, path, "field number %d", num)
		}
		if typ != wireVarint && typ != wireFixed64 && typ != wireBytes && typ != wireFixed32 {
			return d.wireErr(at, path, "field %d of wire type %d (groups and others are not ONNX's)", num, typ)
		}
		if err := f(int(num), typ, at); err != nil {
			return err
		}
		if d.pos > end {
			return d.wireErr(at, path, "field %d runs past the end of its message", num)
		}
	}
}

// want checks a known field's wire type.
func (d *decoder) want(typ, expected int, at int64, field string) error {
	if typ != expected {
		return d.wireErr(at, field, "wire type %d, expected %d", typ, expected)
	}
	return nil
}

// message reads the length of a message field and returns its end.
func (d *decoder) message(typ int, at, end int64, field string) (int64, error) {
	if err := d.want(typ, wireBytes, at, field); err != nil {
		return 0, err
	}
	n, err := d.length(end, field)
	return d.pos + n, err
}

// stringField reads a string field of at most max bytes.
func (d *decoder) stringField(typ int, at, end int64, field string, max int64) (string, error) {
	if err := d.want(typ, wireBytes, at, field); err != nil {
		return "", err
	}
	n, err := d.length(end, field)
	if err != nil {
		return "", err
	}
	if n > max {
		return "", fmt.Errorf("byte %d, %s: a string of %d bytes, more than the cap of %d", at, field, n, max)
	}
	b := make([]byte, n)
	if err := d.full(b, field); err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *decoder) int64Field(typ int, at int64, field string) (int64, error) {
	if err := d.want(typ, wireVarint, at, field); err != nil {
		return 0, err
	}
	v, err := d.varint(field)
	return int64(v), err
}

// readModel reads a ModelProto from the whole input.
func (d *decoder) readModel() (*modelMsg, error) {
	m := &modelMsg{}
	err := d.fields(d.limit, true, "ModelProto", func(num, typ int, at int64) error {
		var err error
		switch num {
		case 1:
			m.irVer, err = d.int64Field(typ, at, "ir_version")
			m.hasIR = true
		case 2, 3:
			m.producer[num-2], err = d.stringField(typ, at, d.limit, "producer", MaxName)
		case 7:
			if m.graph == nil {
				m.graph = &graphMsg{}
			}
			var end int64
			if end, err = d.message(typ, at, d.limit, "graph"); err == nil {
				err = d.readGraph(m.graph, end)
			}
		case 8:
			var o opsetMsg
			if err = d.entry("opset_import"); err == nil {
				err = d.pairs(typ, at, d.limit, "opset_import", func(num, typ int, at, end int64) (err error) {
					switch num {
					case 1:
						o.domain, err = d.stringField(typ, at, end, "opset_import.domain", MaxName)
					case 2:
						o.version, err = d.int64Field(typ, at, "opset_import.version")
					default:
						err = d.skip(typ, end, "opset_import")
					}
					return err
				})
			}
			m.opsets = append(m.opsets, o)
		case 14:
			var p [2]string
			path := fmt.Sprintf("metadata_props[%d]", len(m.props))
			if err = d.entry(path); err != nil {
				return err
			}
			var end int64
			if end, err = d.message(typ, at, d.limit, path); err != nil {
				return err
			}
			if d.props += end - d.pos; d.props > MaxMetadata {
				return fmt.Errorf("byte %d, %s: metadata_props of more than %d bytes, the cap of the import", at, path, MaxMetadata)
			}
			err = d.fields(end, false, path, func(num, typ int, at int64) (err error) {
				if num == 1 || num == 2 {
					p[num-1], err = d.stringField(typ, at, end, path+[...]string{1: ".key", 2: ".value"}[num], MaxMetadata)
					return err
				}
				return d.skip(typ, end, path)
			})
			m.props = append(m.props, p)
		default:
			err = d.skip(typ, d.limit, "ModelProto")
		}
		return err
	})
	return m, err
}

// pairs reads a small message field (an opset, a metadata entry) with f.
func (d *decoder) pairs(typ int, at, outer int64, field string, f func(num, typ int, at, end int64) error) error {
	end, err := d.message(typ, at, outer, field)
	if err != nil {
		return err
	}
	return d.fields(end, false, field, func(num, typ int, at int64) error { return f(num, typ, at, end) })
}

func (d *decoder) readGraph(g *graphMsg, end int64) error {
	return d.fields(end, false, "graph", func(num, typ int, at int64) error {
		switch num {
		case 1:
			path := fmt.Sprintf("graph.node[%d]", len(g.nodes))
			if err := d.entry(path); err != nil {
				return err
			}
			n := &nodeMsg{}
			g.nodes = append(g.nodes, n)
			e, err := d.message(typ, at, end, path)
			if err != nil {
				return err
			}
			return d.readNode(n, e, path)
		case 5:
			path := fmt.Sprintf("graph.initializer[%d]", len(g.inits))
			if err := d.entry(path); err != nil {
				return err
			}
			e, err := d.message(typ, at, end, path)
			if err != nil {
				return err
			}
			t, err := d.readTensor(e, path)
			g.inits = append(g.inits, t)
			return err
		case 11, 12:
			path := "graph.input"
			list := &g.inputs
			if num == 12 {
				path, list = "graph.output", &g.outputs
			}
			path = fmt.Sprintf("%s[%d]", path, len(*list))
			if err := d.entry(path); err != nil {
				return err
			}
			v := &valueMsg{}
			*list = append(*list, v)
			e, err := d.message(typ, at, end, path)
			if err != nil {
				return err
			}
			return d.readValue(v, e, path)
		}
		return d.skip(typ, end, "graph")
	})
}

func (d *decoder) readNode(n *nodeMsg, end int64, path string) error {
	return d.fields(end, false, path, func(num, typ int, at int64) error {
		var err error
		switch num {
		case 1, 2:
			var s string
			field := [...]string{1: ".input", 2: ".output"}[num]
			if err = d.entry(path + field); err == nil {
				s, err = d.stringField(typ, at, end, path+field, MaxName)
			}
			if num == 1 {
				n.inputs = append(n.inputs, s)
			} else {
				n.outputs = append(n.outputs, s)
			}
		case 3:
			n.name, err = d.stringField(typ, at, end, path+".name", MaxName)
		case 4:
			n.opType, err = d.stringField(typ, at, end, path+".op_type", MaxName)
		case 7:
			n.domain, err = d.stringField(typ, at, end, path+".domain", MaxName)
		case 5:
			var a attrMsg
			apath := fmt.Sprintf("%s.attribute[%d]", path, len(n.attrs))
			if err = d.entry(apath); err == nil {
				err = d.pairs(typ, at, end, apath, func(num, typ int, at, end int64) (err error) {
					switch num {
					case 1:
						a.name, err = d.stringField(typ, at, end, apath+".name", MaxName)
					case 2:
						if err = d.want(typ, wireFixed32, at, apath+".f"); err == nil {
							var u uint32
							u, err = d.fixed32(apath + ".f")
							a.f, a.hasF = math.Float32frombits(u), true
						}
					case 3:
						a.i, err = d.int64Field(typ, at, apath+".i")
						a.hasI = true
					case 20:
						a.typ, err = d.int64Field(typ, at, apath+".type")
					default:
						err = d.skip(typ, end, apath)
					}
					return err
				})
			}
			n.attrs = append(n.attrs, a)
		default:
			err = d.skip(typ, end, path)
		}
		return err
	})
}

// readValue reads a ValueInfoProto: its name and, of a tensor type, the element type
// and shape.
func (d *decoder) readValue(v *valueMsg, end int64, path string) error {
	return d.fields(end, false, path, func(num, typ int, at int64) error {
		switch num {
		case 1:
			var err error
			v.name, err = d.stringField(typ, at, end, path+".name", MaxName)
			return err
		case 2: // TypeProto
			return d.pairs(typ, at, end, path+".type", func(num, typ int, at, tend int64) error {
				if num != 1 {
					if num == 4 || num == 5 || num == 8 || num == 9 {
						v.tensor = false // another member of the type's oneof, set last
					}
					return d.skip(typ, tend, path+".type")
				}
				v.tensor = true
				return d.pairs(typ, at, tend, path+".type.tensor_type", func(num, typ int, at, ttend int64) (err error) {
					switch num {
					case 1:
						var e int64
						e, err = d.int64Field(typ, at, path+".type.tensor_type.elem_type")
						v.elemType = int32(e)
					case 2:
						v.hasShape = true
						err = d.pairs(typ, at, ttend, path+".shape", func(num, typ int, at, send int64) error {
							if num != 1 {
								return d.skip(typ, send, path+".shape")
							}
							if len(v.dims) == MaxDims {
								return d.wireErr(at, path+".shape", "more than %d dimensions", MaxDims)
							}
							var dm dimMsg
							err := d.pairs(typ, at, send, path+".shape.dim", func(num, typ int, at, dend int64) (err error) {
								switch num {
								case 1:
									dm.value, err = d.int64Field(typ, at, path+".shape.dim.dim_value")
									dm.hasValue = true
								case 2:
									err = d.skip(typ, dend, path+".shape.dim.dim_param")
									dm.hasValue = false
								default:
									err = d.skip(typ, dend, path+".shape.dim")
								}
								return err
							})
							v.dims = append(v.dims, dm)
							return err
						})
					default:
						err = d.skip(typ, ttend, path+".type.tensor_type")
					}
					return err
				})
			})
		}
		return d.skip(typ, end, path)
	})
}

// readTensor reads an initializer. Its dims and data_type must come before its data
// (every protobuf writer orders fields by number, and these are fields 1 and 2), so
// that a data length is checked against the shape before any byte of it is read.
func (d *decoder) readTensor(end int64, path string) (*tensorMsg, error) {
	t := &tensorMsg{}
	count := int64(1)
	var data bool // a data field was read
	var raw bool  // raw_data was read: it has precedence
	var typed []float32
	name := func() string {
		if t.name != "" {
			return fmt.Sprintf("initializer %q", t.name)
		}
		return path
	}
	sizeErr := func(at int64, field, format string, args ...any) error {
		return fmt.Errorf("%s: %s (byte %d, %s.%s)", name(), fmt.Sprintf(format, args...), at, path, field)
	}
	floatField, doubleField := path+".float_data", path+".double_data"
	decodeType := func() int32 {
		if t.dataType == int32(pb.TensorProto_FLOAT) || t.dataType == int32(pb.TensorProto_DOUBLE) {
			return t.dataType
		}
		return 0
	}
	err := d.fields(end, false, path, func(num, typ int, at int64) error {
		switch num {
		case 1, 2:
			field := [...]string{1: "dims", 2: "data_type"}[num]
			if data {
				return sizeErr(at, field, "%s after the tensor's data; expected before it, in field order", field)
			}
			if num == 2 {
				v, err := d.int64Field(typ, at, path+".data_type")
				t.dataType = int32(v)
				return err
			}
			return d.repeated(typ, at, end, path+".dims", wireVarint, func(u uint64) error {
				dim := int64(u)
				if len(t.dims) == MaxDims {
					return sizeErr(at, "dims", "more than %d dimensions", MaxDims)
				}
				t.dims = append(t.dims, dim)
				if dim < 0 || dim > model.MaxNeuralParams || count*dim > model.MaxNeuralParams {
					return sizeErr(at, "dims", "shape %v, expected at most %d values", t.dims, model.MaxNeuralParams)
				}
				count *= dim
				return nil
			})
		case 8:
			var err error
			t.name, err = d.stringField(typ, at, end, path+".name", MaxName)
			return err
		case 14:
			v, err := d.int64Field(typ, at, path+".data_location")
			t.external = v == int64(pb.TensorProto_EXTERNAL)
			return err
		case 9: // raw_data
			data, raw = true, true
			if err := d.want(typ, wireBytes, at, path+".raw_data"); err != nil {
				return err
			}
			n, err := d.length(end, path+".raw_data")
			if err != nil {
				return err
			}
			if size, ok := elemSize[t.dataType]; ok && n != count*size {
				return sizeErr(at, "raw_data", "%d bytes of raw data for shape %v, expected %d", n, t.dims, count*size)
			}
			if decodeType() == 0 {
				return d.skipN(n, path+".raw_data")
			}
			t.v = make([]float32, count)
			return d.floats(t.v, n, t.dataType == int32(pb.TensorProto_DOUBLE), path+".raw_data")
		case 4, 10: // float_data, double_data: packed or not
			data = true
			field, full, wt, dt := "float_data", floatField, wireFixed32, pb.TensorProto_FLOAT
			if num == 10 {
				field, full, wt, dt = "double_data", doubleField, wireFixed64, pb.TensorProto_DOUBLE
			}
			if t.dataType != int32(dt) {
				return d.skip(typ, end, full)
			}
			if typ == wireBytes {
				n, err := d.length(end, full)
				if err != nil {
					return err
				}
				size := int64(4)
				if num == 10 {
					size = 8
				}
				if n%size != 0 {
					return d.wireErr(at, full, "%d bytes, not a whole number of %d-byte values", n, size)
				}
				if int64(len(typed))+n/size > count {
					return sizeErr(at, field, "%d values for shape %v, expected %d", int64(len(typed))+n/size, t.dims, count)
				}
				k := len(typed)
				typed = append(typed, make([]float32, n/size)...)
				return d.floats(typed[k:], n, num == 10, full)
			}
			if err := d.want(typ, wt, at, full); err != nil {
				return err
			}
			if int64(len(typed)) == count {
				return sizeErr(at, field, "more than %d values for shape %v", count, t.dims)
			}
			if typed == nil {
				// room for the values the message can hold: each takes a tag and 4 or 8 bytes
				per := int64(5)
				if num == 10 {
					per = 9
				}
				typed = make([]float32, 0, min(count, (end-d.pos)/per+1))
			}
			var f float32
			if num == 4 {
				u, err := d.fixed32(full)
				if err != nil {
					return err
				}
				f = math.Float32frombits(u)
			} else {
				u, err := d.fixed64(full)
				if err != nil {
					return err
				}
				f = float32(math.Float64frombits(u))
			}
			typed = append(typed, f)
			return nil
		}
		return d.skip(typ, end, path)
	})
	if err != nil {
		return t, err
	}
	switch {
	case raw || t.external || decodeType() == 0:
	case int64(len(typed)) != count:
		return t, fmt.Errorf("%s: %d values for shape %v, expected %d (%s)", name(), len(typed), t.dims, count, path)
	default:
		t.v = typed
	}
	return t, nil
}

// repeated reads a repeated varint field, packed or not.
func (d *decoder) repeated(typ int, at, end int64, field string, wt int, f func(uint64) error) error {
	if typ != wireBytes {
		if err := d.want(typ, wt, at, field); err != nil {
			return err
		}
		u, err := d.varint(field)
		if err != nil {
			return err
		}
		return f(u)
	}
	n, err := d.length(end, field)
	if err != nil {
		return err
	}
	for stop := d.pos + n; d.pos < stop; {
		u, err := d.varint(field)
		if err != nil {
			return err
		}
		if d.pos > stop {
			return d.wireErr(d.pos, field, "a varint runs past the end of the packed field")
		}
		if err := f(u); err != nil {
			return err
		}
	}
	return nil
}

// floats decodes n bytes of little-endian float32 (or float64, double) into dst.
func (d *decoder) floats(dst []float32, n int64, double bool, field string) error {
	size := int64(4)
	if double {
		size = 8
	}
	if int64(len(dst))*size != n {
		return d.wireErr(d.pos, field, "%d bytes for %d values", n, len(dst))
	}
	if d.buf == nil {
		d.buf = make([]byte, 64<<10)
	}
	for len(dst) > 0 {
		k := min(len(dst), len(d.buf)/int(size))
		b := d.buf[:k*int(size)]
		if err := d.full(b, field); err != nil {
			return err
		}
		for i := range k {
			if double {
				dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
			} else {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		}
		dst = dst[k:]
	}
	return nil
}
