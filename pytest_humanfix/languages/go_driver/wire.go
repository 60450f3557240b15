package main

// The calls between the tests and the candidate of a Go task, which run in two test binaries
// (docs/languages.md#execution): one JSON line per message on descriptors 3 (calls in) and 4
// (calls out), every value read and written by the type the declaration gives it.
//
// bool: true or false. Integers: a JSON integer, parsed exactly at the type's size. Floats: a
// JSON number in the shortest form that reads back the same bits ("-0" included), or the
// string "NaN", "+Inf" or "-Inf". Complex: [real, imag]. string: a JSON string, or {"bytes":
// "<hex>"} where it is not UTF-8. Slice and map: null where nil (assert.Equal tells nil from
// empty); a slice a JSON array, a map an array of [key, value] pairs (any key type). Array: a
// JSON array of its length. interface{}: null where nil, else {"type": T, "value": v}, T the
// dynamic type as "int", "float64", ... {"slice": T}, {"array": [n, T]}, {"map": [K, V]} or
// "interface{}". Pointers, structs, functions, channels and named types of the candidate's own
// are not plain data: the answer is refused and the call fails. The tests' side rebuilds each
// answer as a value of its own of the declared type: nothing of the candidate's reaches
// assert.Equal.
//
// A call is {"args": [...], "kwargs": [], "limit": null}; an answer {"value": v}, {"raise":
// {"type": "panic", "args": [message]}} for a panic of the candidate's code, or {"refused":
// why}.

import (
	humanfixBytes "bytes"
	humanfixHex "encoding/hex"
	humanfixJSON "encoding/json"
	humanfixErrors "errors"
	humanfixFmt "fmt"
	humanfixMath "math"
	humanfixOS "os"
	humanfixReflect "reflect"
	humanfixDebug "runtime/debug"
	humanfixStrconv "strconv"
	humanfixUTF8 "unicode/utf8"
)

const (
	humanfixMessageBytes = 16 << 20
	humanfixDepth        = 100
	humanfixArrayLength  = 1 << 20
	humanfixShownChars   = 200
)

var humanfixEmptyInterface = humanfixReflect.TypeOf((*interface{})(nil)).Elem()

// The two pipes, each one *os.File for the process's life: a File the collector finds
// unreachable closes its descriptor.
var (
	humanfixIn  = &humanfixReader{fd: humanfixOS.NewFile(3, "humanfix-in")}
	humanfixOut = humanfixOS.NewFile(4, "humanfix-out")
)

var humanfixBasicTypes = map[string]humanfixReflect.Type{}

func init() {
	for _, value := range []interface{}{false, int(0), int8(0), int16(0), int32(0), int64(0),
		uint(0), uint8(0), uint16(0), uint32(0), uint64(0), uintptr(0), float32(0), float64(0),
		complex64(0), complex128(0), ""} {
		kind := humanfixReflect.TypeOf(value)
		humanfixBasicTypes[kind.Name()] = kind
	}
}

func humanfixNotPlain(kind humanfixReflect.Type) error {
	return humanfixFmt.Errorf("a value of type %s is not plain data (bool, numbers, string, "+
		"slices, arrays, maps and interface{} of them)", kind)
}

// humanfixTypeOf describes a dynamic type for the other side to make again.
func humanfixTypeOf(kind humanfixReflect.Type, depth int) (interface{}, error) {
	if depth > humanfixDepth {
		return nil, humanfixErrors.New("a type nested too deep")
	}
	if kind.PkgPath() == "" && humanfixBasicTypes[kind.Name()] == kind {
		return kind.Name(), nil
	}
	if kind.Name() != "" {
		return nil, humanfixNotPlain(kind)
	}
	switch kind.Kind() {
	case humanfixReflect.Slice:
		elem, err := humanfixTypeOf(kind.Elem(), depth+1)
		return map[string]interface{}{"slice": elem}, err
	case humanfixReflect.Array:
		elem, err := humanfixTypeOf(kind.Elem(), depth+1)
		return map[string]interface{}{"array": []interface{}{kind.Len(), elem}}, err
	case humanfixReflect.Map:
		key, err := humanfixTypeOf(kind.Key(), depth+1)
		if err != nil {
			return nil, err
		}
		elem, err := humanfixTypeOf(kind.Elem(), depth+1)
		return map[string]interface{}{"map": []interface{}{key, elem}}, err
	case humanfixReflect.Interface:
		if kind == humanfixEmptyInterface {
			return "interface{}", nil
		}
	}
	return nil, humanfixNotPlain(kind)
}

// humanfixMadeType makes a type again from its description.
func humanfixMadeType(raw humanfixJSON.RawMessage, depth int) (humanfixReflect.Type, error) {
	if depth > humanfixDepth {
		return nil, humanfixErrors.New("a type nested too deep")
	}
	var name string
	if humanfixJSON.Unmarshal(raw, &name) == nil {
		if name == "interface{}" {
			return humanfixEmptyInterface, nil
		}
		if kind, ok := humanfixBasicTypes[name]; ok {
			return kind, nil
		}
		return nil, humanfixFmt.Errorf("an unknown type %.40q", name)
	}
	tag, inner, err := humanfixTagged(raw)
	if err != nil {
		return nil, err
	}
	var parts []humanfixJSON.RawMessage
	if tag != "slice" && (humanfixJSON.Unmarshal(inner, &parts) != nil || len(parts) != 2) {
		return nil, humanfixFmt.Errorf("a %.20s type not given as a pair", tag)
	}
	switch tag {
	case "slice":
		elem, err := humanfixMadeType(inner, depth+1)
		if err != nil {
			return nil, err
		}
		return humanfixReflect.SliceOf(elem), nil
	case "array":
		var length int
		if humanfixJSON.Unmarshal(parts[0], &length) != nil || length < 0 ||
			length > humanfixArrayLength {
			return nil, humanfixErrors.New("an array type of no possible length")
		}
		elem, err := humanfixMadeType(parts[1], depth+1)
		if err != nil {
			return nil, err
		}
		return humanfixReflect.ArrayOf(length, elem), nil
	case "map":
		key, err := humanfixMadeType(parts[0], depth+1)
		if err != nil {
			return nil, err
		}
		if !key.Comparable() {
			return nil, humanfixFmt.Errorf("a map type whose key %s is not comparable", key)
		}
		elem, err := humanfixMadeType(parts[1], depth+1)
		if err != nil {
			return nil, err
		}
		return humanfixReflect.MapOf(key, elem), nil
	}
	return nil, humanfixFmt.Errorf("an unknown kind of type %.40q", tag)
}

// humanfixTagged reads a one-key object.
func humanfixTagged(raw humanfixJSON.RawMessage) (string, humanfixJSON.RawMessage, error) {
	var object map[string]humanfixJSON.RawMessage
	if humanfixJSON.Unmarshal(raw, &object) != nil || len(object) != 1 {
		return "", nil, humanfixErrors.New("a message holds a value that is not plain data")
	}
	for tag, inner := range object {
		return tag, inner, nil
	}
	return "", nil, nil
}

func humanfixEncode(out *humanfixBytes.Buffer, value humanfixReflect.Value, depth int) error {
	if depth > humanfixDepth {
		return humanfixFmt.Errorf("a value nested more than %d deep", humanfixDepth)
	}
	if out.Len() > humanfixMessageBytes {
		return humanfixFmt.Errorf("a value longer than the %d bytes a message may hold",
			humanfixMessageBytes)
	}
	switch value.Kind() {
	case humanfixReflect.Bool:
		out.WriteString(humanfixStrconv.FormatBool(value.Bool()))
	case humanfixReflect.Int, humanfixReflect.Int8, humanfixReflect.Int16,
		humanfixReflect.Int32, humanfixReflect.Int64:
		out.WriteString(humanfixStrconv.FormatInt(value.Int(), 10))
	case humanfixReflect.Uint, humanfixReflect.Uint8, humanfixReflect.Uint16,
		humanfixReflect.Uint32, humanfixReflect.Uint64, humanfixReflect.Uintptr:
		out.WriteString(humanfixStrconv.FormatUint(value.Uint(), 10))
	case humanfixReflect.Float32, humanfixReflect.Float64:
		humanfixEncodeFloat(out, value.Float(), value.Type().Bits())
	case humanfixReflect.Complex64, humanfixReflect.Complex128:
		number := value.Complex()
		out.WriteByte('[')
		humanfixEncodeFloat(out, real(number), value.Type().Bits()/2)
		out.WriteByte(',')
		humanfixEncodeFloat(out, imag(number), value.Type().Bits()/2)
		out.WriteByte(']')
	case humanfixReflect.String:
		text := value.String()
		if !humanfixUTF8.ValidString(text) {
			out.WriteString(`{"bytes":"` + humanfixHex.EncodeToString([]byte(text)) + `"}`)
			break
		}
		quoted, _ := humanfixJSON.Marshal(text)
		out.Write(quoted)
	case humanfixReflect.Slice, humanfixReflect.Array:
		if value.Kind() == humanfixReflect.Slice && value.IsNil() {
			out.WriteString("null")
			break
		}
		out.WriteByte('[')
		for index := 0; index < value.Len(); index++ {
			if index > 0 {
				out.WriteByte(',')
			}
			if err := humanfixEncode(out, value.Index(index), depth+1); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	case humanfixReflect.Map:
		if value.IsNil() {
			out.WriteString("null")
			break
		}
		out.WriteByte('[')
		items := value.MapRange()
		for first := true; items.Next(); first = false {
			if !first {
				out.WriteByte(',')
			}
			out.WriteByte('[')
			if err := humanfixEncode(out, items.Key(), depth+1); err != nil {
				return err
			}
			out.WriteByte(',')
			if err := humanfixEncode(out, items.Value(), depth+1); err != nil {
				return err
			}
			out.WriteByte(']')
		}
		out.WriteByte(']')
	case humanfixReflect.Interface:
		if value.Type() != humanfixEmptyInterface {
			return humanfixNotPlain(value.Type())
		}
		if value.IsNil() {
			out.WriteString("null")
			break
		}
		described, err := humanfixTypeOf(value.Elem().Type(), depth+1)
		if err != nil {
			return err
		}
		kind, _ := humanfixJSON.Marshal(described)
		out.WriteString(`{"type":` + string(kind) + `,"value":`)
		if err := humanfixEncode(out, value.Elem(), depth+1); err != nil {
			return err
		}
		out.WriteByte('}')
	default:
		return humanfixNotPlain(value.Type())
	}
	return nil
}

func humanfixEncodeFloat(out *humanfixBytes.Buffer, number float64, bits int) {
	switch {
	case humanfixMath.IsNaN(number):
		out.WriteString(`"NaN"`)
	case humanfixMath.IsInf(number, 1):
		out.WriteString(`"+Inf"`)
	case humanfixMath.IsInf(number, -1):
		out.WriteString(`"-Inf"`)
	default:
		out.WriteString(humanfixStrconv.FormatFloat(number, 'g', -1, bits))
	}
}

// humanfixDecode makes a value of `kind` from its form on the wire, or says why it cannot.
func humanfixDecode(raw humanfixJSON.RawMessage, kind humanfixReflect.Type,
	depth int) (humanfixReflect.Value, error) {
	made := humanfixReflect.New(kind).Elem()
	if depth > humanfixDepth {
		return made, humanfixFmt.Errorf("a value nested more than %d deep", humanfixDepth)
	}
	null := string(humanfixBytes.TrimSpace(raw)) == "null"
	wrong := humanfixFmt.Errorf("a message holds no %s where one is due", kind)
	switch kind.Kind() {
	case humanfixReflect.Bool:
		var truth bool
		if null || humanfixJSON.Unmarshal(raw, &truth) != nil {
			return made, wrong
		}
		made.SetBool(truth)
	case humanfixReflect.Int, humanfixReflect.Int8, humanfixReflect.Int16,
		humanfixReflect.Int32, humanfixReflect.Int64:
		number, err := humanfixStrconv.ParseInt(string(raw), 10, kind.Bits())
		if err != nil {
			return made, wrong
		}
		made.SetInt(number)
	case humanfixReflect.Uint, humanfixReflect.Uint8, humanfixReflect.Uint16,
		humanfixReflect.Uint32, humanfixReflect.Uint64, humanfixReflect.Uintptr:
		number, err := humanfixStrconv.ParseUint(string(raw), 10, kind.Bits())
		if err != nil {
			return made, wrong
		}
		made.SetUint(number)
	case humanfixReflect.Float32, humanfixReflect.Float64:
		number, err := humanfixDecodeFloat(raw, kind.Bits())
		if err != nil {
			return made, wrong
		}
		made.SetFloat(number)
	case humanfixReflect.Complex64, humanfixReflect.Complex128:
		var parts []humanfixJSON.RawMessage
		if humanfixJSON.Unmarshal(raw, &parts) != nil || len(parts) != 2 {
			return made, wrong
		}
		real, errReal := humanfixDecodeFloat(parts[0], kind.Bits()/2)
		imag, errImag := humanfixDecodeFloat(parts[1], kind.Bits()/2)
		if errReal != nil || errImag != nil {
			return made, wrong
		}
		made.SetComplex(complex(real, imag))
	case humanfixReflect.String:
		var text string
		if !null && humanfixJSON.Unmarshal(raw, &text) == nil {
			made.SetString(text)
			break
		}
		tag, inner, err := humanfixTagged(raw)
		var hex string
		if err != nil || tag != "bytes" || humanfixJSON.Unmarshal(inner, &hex) != nil {
			return made, wrong
		}
		data, err := humanfixHex.DecodeString(hex)
		if err != nil {
			return made, wrong
		}
		made.SetString(string(data))
	case humanfixReflect.Slice, humanfixReflect.Array:
		if null && kind.Kind() == humanfixReflect.Slice {
			break
		}
		var items []humanfixJSON.RawMessage
		if null || humanfixJSON.Unmarshal(raw, &items) != nil ||
			(kind.Kind() == humanfixReflect.Array && len(items) != kind.Len()) {
			return made, wrong
		}
		if kind.Kind() == humanfixReflect.Slice {
			made = humanfixReflect.MakeSlice(kind, len(items), len(items))
		}
		for index, item := range items {
			elem, err := humanfixDecode(item, kind.Elem(), depth+1)
			if err != nil {
				return made, err
			}
			made.Index(index).Set(elem)
		}
	case humanfixReflect.Map:
		if null {
			break
		}
		var pairs [][]humanfixJSON.RawMessage
		if humanfixJSON.Unmarshal(raw, &pairs) != nil {
			return made, wrong
		}
		made = humanfixReflect.MakeMapWithSize(kind, len(pairs))
		for _, pair := range pairs {
			if len(pair) != 2 {
				return made, humanfixErrors.New("a map's item not given as [key, value]")
			}
			key, err := humanfixDecode(pair[0], kind.Key(), depth+1)
			if err != nil {
				return made, err
			}
			if key.Kind() == humanfixReflect.Interface && !key.IsNil() &&
				!key.Elem().Type().Comparable() {
				return made, humanfixFmt.Errorf("a map key of type %s", key.Elem().Type())
			}
			elem, err := humanfixDecode(pair[1], kind.Elem(), depth+1)
			if err != nil {
				return made, err
			}
			made.SetMapIndex(key, elem)
		}
	case humanfixReflect.Interface:
		if kind != humanfixEmptyInterface {
			return made, humanfixNotPlain(kind)
		}
		if null {
			break
		}
		var dynamic struct {
			Type  humanfixJSON.RawMessage `json:"type"`
			Value humanfixJSON.RawMessage `json:"value"`
		}
		if humanfixJSON.Unmarshal(raw, &dynamic) != nil || dynamic.Type == nil ||
			dynamic.Value == nil {
			return made, wrong
		}
		held, err := humanfixMadeType(dynamic.Type, depth+1)
		if err != nil {
			return made, err
		}
		inner, err := humanfixDecode(dynamic.Value, held, depth+1)
		if err != nil {
			return made, err
		}
		made.Set(inner)
	default:
		return made, humanfixNotPlain(kind)
	}
	return made, nil
}

func humanfixDecodeFloat(raw humanfixJSON.RawMessage, bits int) (float64, error) {
	var special string
	if humanfixJSON.Unmarshal(raw, &special) == nil {
		switch special {
		case "NaN", "+Inf", "-Inf":
			return humanfixStrconv.ParseFloat(special, 64)
		}
		return 0, humanfixErrors.New("not a number")
	}
	var number humanfixJSON.Number
	if err := humanfixJSON.Unmarshal(raw, &number); err != nil {
		return 0, err
	}
	return humanfixStrconv.ParseFloat(string(number), bits)
}

func humanfixSend(message []byte) error {
	if len(message) >= humanfixMessageBytes {
		return humanfixFmt.Errorf("a message of %d bytes, more than the %d a call or an "+
			"answer may hold", len(message), humanfixMessageBytes)
	}
	_, err := humanfixOut.Write(append(message, '\n'))
	return err
}

// humanfixReader reads one message at a time from a pipe, never more than the cap of one
// message; nil once the other side has closed its end.
type humanfixReader struct {
	fd      *humanfixOS.File
	pending []byte
}

func (reader *humanfixReader) read() (map[string]humanfixJSON.RawMessage, error) {
	chunk := make([]byte, 1<<16)
	for {
		if end := humanfixBytes.IndexByte(reader.pending, '\n'); end >= 0 {
			line := reader.pending[:end]
			reader.pending = reader.pending[end+1:]
			var message map[string]humanfixJSON.RawMessage
			if err := humanfixJSON.Unmarshal(line, &message); err != nil || message == nil {
				return nil, humanfixErrors.New("a message that is not a JSON object")
			}
			return message, nil
		}
		if len(reader.pending) > humanfixMessageBytes {
			return nil, humanfixFmt.Errorf("a message longer than %d bytes",
				humanfixMessageBytes)
		}
		got, err := reader.fd.Read(chunk)
		reader.pending = append(reader.pending, chunk[:got]...)
		if got == 0 && err != nil {
			if len(reader.pending) > 0 {
				return nil, humanfixErrors.New("a message cut off before its end")
			}
			return nil, nil
		}
	}
}

// humanfixAnswer is the candidate's side: each call of the tests is answered with what
// `entry` (the candidate's entry point, of the declared type) returns, until the tests close
// their end.
func humanfixAnswer(entry interface{}) {
	function := humanfixReflect.ValueOf(entry)
	for {
		call, err := humanfixIn.read()
		if call == nil || err != nil || humanfixSend(humanfixAnswered(function, call)) != nil {
			return
		}
	}
}

func humanfixAnswered(function humanfixReflect.Value,
	call map[string]humanfixJSON.RawMessage) []byte {
	var args []humanfixJSON.RawMessage
	kind := function.Type()
	if humanfixJSON.Unmarshal(call["args"], &args) != nil || len(args) != kind.NumIn() {
		return humanfixRaised("a call without the arguments the entry point takes")
	}
	in := make([]humanfixReflect.Value, len(args))
	for index, arg := range args {
		value, err := humanfixDecode(arg, kind.In(index), 0)
		if err != nil {
			return humanfixRaised(err.Error())
		}
		in[index] = value
	}
	out, panicked := humanfixCalled(function, in)
	if panicked != "" {
		return humanfixRaised(panicked)
	}
	var value humanfixBytes.Buffer
	value.WriteString(`{"value":`)
	err := humanfixEncode(&value, out[0], 0)
	if err == nil && value.Len() < humanfixMessageBytes {
		value.WriteByte('}')
		return value.Bytes()
	}
	if err == nil {
		err = humanfixFmt.Errorf("a value longer than the %d bytes a message may hold",
			humanfixMessageBytes)
	}
	refused, _ := humanfixJSON.Marshal(map[string]string{
		"refused": "the entry point returned a value that cannot reach the tests: " + err.Error()})
	return refused
}

// humanfixCalled calls the entry point; a panic is written as Go writes it, and told.
func humanfixCalled(function humanfixReflect.Value,
	in []humanfixReflect.Value) (out []humanfixReflect.Value, panicked string) {
	defer func() {
		if caught := recover(); caught != nil {
			panicked = humanfixShown(caught)
			humanfixOS.Stderr.WriteString("panic: " + panicked + "\n\n" +
				string(humanfixDebug.Stack()))
		}
	}()
	return function.Call(in), ""
}

// humanfixShown is what a panic's value says; a value whose String or Error panics in turn
// says so.
func humanfixShown(caught interface{}) (shown string) {
	defer func() {
		if recover() != nil {
			shown = humanfixFmt.Sprintf("a panic whose value (%T) cannot be shown", caught)
		}
	}()
	if err, ok := caught.(error); ok {
		return err.Error()
	}
	return humanfixFmt.Sprint(caught)
}

func humanfixRaised(message string) []byte {
	if len(message) > 2000 {
		message = message[:2000]
	}
	raised, _ := humanfixJSON.Marshal(map[string]interface{}{
		"raise": map[string]interface{}{"type": "panic", "args": []string{message}}})
	return raised
}

// humanfixCall is the tests' side: the entry point's stub sends its arguments (pointers to
// them, so each is written by its declared type) and rebuilds the answer into `result`. Any
// answer that is no value fails the test that made the call, as a panic.
func humanfixCall(name string, args []interface{}, result interface{}) {
	what := humanfixWhat(name, args)
	var call humanfixBytes.Buffer
	call.WriteString(`{"args":[`)
	for index, arg := range args {
		if index > 0 {
			call.WriteByte(',')
		}
		if err := humanfixEncode(&call, humanfixReflect.ValueOf(arg).Elem(), 0); err != nil {
			panic(humanfixFmt.Sprintf("%s: an argument cannot be sent: %s", what, err))
		}
	}
	call.WriteString(`],"kwargs":[],"limit":null}`)
	var answer map[string]humanfixJSON.RawMessage
	// A write that fails is a pipe the candidate's process no longer reads: it ended.
	err := humanfixSend(call.Bytes())
	if err == nil {
		answer, err = humanfixIn.read()
		if err != nil {
			panic(humanfixFmt.Sprintf("the candidate's answer to %s is unreadable: %s", what,
				err))
		}
	}
	if answer == nil {
		panic(humanfixFmt.Sprintf("the candidate's process ended before it answered %s", what))
	}
	if value, ok := answer["value"]; ok {
		made, err := humanfixDecode(value, humanfixReflect.TypeOf(result).Elem(), 0)
		if err != nil {
			panic(humanfixFmt.Sprintf("the candidate's answer to %s is not plain data: %s",
				what, err))
		}
		humanfixReflect.ValueOf(result).Elem().Set(made)
		return
	}
	if raised, ok := answer["raise"]; ok {
		var told struct{ Args []string }
		humanfixJSON.Unmarshal(raised, &told)
		message := ""
		if len(told.Args) > 0 {
			message = told.Args[0]
		}
		panic(humanfixFmt.Sprintf("%s panicked in the candidate's process: %s", what, message))
	}
	var refused string
	if humanfixJSON.Unmarshal(answer["refused"], &refused) != nil || refused == "" {
		refused = "the candidate's answer to " + what + " is not plain data"
	}
	if len(refused) > 1000 {
		refused = refused[:1000]
	}
	panic(refused)
}

func humanfixWhat(name string, args []interface{}) string {
	shown := ""
	for index, arg := range args {
		if index > 0 {
			shown += ", "
		}
		shown += humanfixFmt.Sprintf("%#v", humanfixReflect.ValueOf(arg).Elem().Interface())
	}
	if len(shown) > humanfixShownChars {
		shown = shown[:humanfixShownChars] + "..."
	}
	return name + "(" + shown + ")"
}
