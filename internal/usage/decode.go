package usage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/prometheus/common/model"
)

// answer is the envelope of a Prometheus API answer, less its data, which
// decodeAnswer hands over series by series.
type answer struct {
	status, errorType, errorMsg string
	resultType                  string
	warnings, infos             []string
}

// errSyntax marks an answer that is not the JSON of the Prometheus API.
var errSyntax = errors.New("malformed answer")

// decodeAnswer reads a Prometheus API answer from src in one pass and
// calls each for every series of a matrix, in the order of the answer,
// without holding more than one series: {"status": ..., "data":
// {"resultType": "matrix", "result": [{"metric": {...}, "values": [[t,
// "v"], ...]}, ...]}, "warnings": [...], ...}. The series passed to each
// is reused: its Metric is its own, its Values only valid during the
// call. Members it does not know, native histograms included, are skipped.
// A result of another type than a matrix is skipped, and resultType says
// which it was. An error wraps errSyntax when the answer is not of the
// API's shape or not JSON (numbers in members it skips are not checked), or
// is the reader's error.
func decodeAnswer(src io.Reader, each func(*model.SampleStream) error) (answer, error) {
	return decodeEnvelope(src, func(d *decoder, a *answer) error { return d.data(a, each) })
}

// decodeEnvelope reads a Prometheus API answer from src in one pass, its
// data with data, which may fill in the answer, and the rest itself.
func decodeEnvelope(src io.Reader, data func(*decoder, *answer) error) (answer, error) {
	d := &decoder{src: src, buf: make([]byte, 0, 64<<10)}
	var a answer
	texts := func(into *[]string) error {
		return d.array(func() error {
			var s string
			err := d.stringInto(&s)
			*into = append(*into, s)
			return err
		})
	}
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "status":
			return d.stringInto(&a.status)
		case "errorType":
			return d.stringInto(&a.errorType)
		case "error":
			return d.stringInto(&a.errorMsg)
		case "warnings":
			return texts(&a.warnings)
		case "infos":
			return texts(&a.infos)
		case "data":
			return data(d, &a)
		}
		return d.skip()
	})
	if errors.Is(err, io.ErrUnexpectedEOF) && errors.Is(d.err, io.EOF) {
		// The body ended where the server meant it to, within the JSON.
		return a, d.syntax("unexpected end of the answer")
	}
	if err != nil {
		return a, err
	}
	if c, err := d.space(); err == nil {
		return a, d.syntax(fmt.Sprintf("%q after the answer", c))
	} else if !errors.Is(err, io.EOF) {
		return a, err
	}
	return a, nil
}

func (d *decoder) data(a *answer, each func(*model.SampleStream) error) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "resultType":
			return d.stringInto(&a.resultType)
		case "result":
			// Prometheus sends the type first; a result of another type
			// is skipped.
			if a.resultType != "" && a.resultType != model.ValMatrix.String() {
				return d.skip()
			}
			if c, err := d.peekSpace(); err != nil {
				return err
			} else if c != '[' && c != 'n' {
				return d.skip()
			}
			return d.matrix(each)
		}
		return d.skip()
	})
}

// labelSets reads the data of a series listing: an array of label sets,
// [{"__name__": "up", "job": "x"}, ...]; nil when it is null.
func (d *decoder) labelSets() ([]model.LabelSet, error) {
	if c, err := d.peekSpace(); err != nil || c == 'n' {
		return nil, d.array(func() error { return nil })
	}
	sets := []model.LabelSet{}
	err := d.array(func() error {
		set := model.LabelSet{}
		err := d.object(func(name []byte) error {
			// The key is the decoder's buffer until the value is read.
			n := model.LabelName(name)
			var v string
			err := d.stringInto(&v)
			set[n] = model.LabelValue(v)
			return err
		})
		sets = append(sets, set)
		return err
	})
	return sets, err
}

// matrix reads the series of a matrix.
func (d *decoder) matrix(each func(*model.SampleStream) error) error {
	var s model.SampleStream
	return d.array(func() error {
		s.Metric, s.Values = model.Metric{}, s.Values[:0]
		err := d.object(func(key []byte) error {
			switch string(key) {
			case "metric":
				return d.object(func(name []byte) error {
					// The key is the decoder's buffer until the value is
					// read.
					n := model.LabelName(name)
					var v string
					err := d.stringInto(&v)
					s.Metric[n] = model.LabelValue(v)
					return err
				})
			case "values":
				return d.array(func() error {
					p, err := d.samplePair()
					s.Values = append(s.Values, p)
					return err
				})
			}
			return d.skip()
		})
		if err != nil {
			return err
		}
		return each(&s)
	})
}

// samplePair reads [t, "v"]: t in seconds with at most millisecond
// precision, v a float as Prometheus formats it, NaN and ±Inf included.
func (d *decoder) samplePair() (model.SamplePair, error) {
	var p model.SamplePair
	if err := d.expect('['); err != nil {
		return p, err
	}
	if _, err := d.peekSpace(); err != nil {
		return p, err
	}
	num, err := d.number()
	if err != nil {
		return p, err
	}
	ms, err := millis(num)
	if err != nil {
		return p, d.syntax(err.Error())
	}
	p.Timestamp = model.Time(ms)
	if err := d.expect(','); err != nil {
		return p, err
	}
	if err := d.expect('"'); err != nil {
		return p, err
	}
	v, err := d.stringBody()
	if err != nil {
		return p, err
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return p, d.syntax(fmt.Sprintf("sample value %q", v))
	}
	p.Value = model.SampleValue(f)
	return p, d.expect(']')
}

// millis converts a JSON number of seconds to milliseconds, in integers:
// decimals past the third are dropped, as the client library drops them.
// A number with an exponent goes through a float.
func millis(num []byte) (int64, error) {
	var ms int64
	i, neg := 0, false
	if len(num) > 0 && num[0] == '-' {
		neg, i = true, 1
	}
	digits, decimals, dot := 0, 0, false
	for ; i < len(num); i++ {
		c := num[i]
		switch {
		case c >= '0' && c <= '9' && dot && decimals >= 3:
		case c >= '0' && c <= '9' && digits < 15:
			ms = ms*10 + int64(c-'0')
			digits++
			if dot {
				decimals++
			}
		case c == '.' && !dot:
			dot = true
		default:
			f, err := strconv.ParseFloat(string(num), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, fmt.Errorf("timestamp %q", num)
			}
			return int64(math.Round(f * 1000)), nil
		}
	}
	if digits == 0 {
		return 0, fmt.Errorf("timestamp %q", num)
	}
	for ; decimals < 3; decimals++ {
		ms *= 10
	}
	if neg {
		ms = -ms
	}
	return ms, nil
}

// decoder is a JSON reader for the few shapes of the Prometheus API, over a
// buffer of its own, that allocates nothing per number or sample.
type decoder struct {
	src      io.Reader
	buf      []byte // read ahead, buf[pos:] not yet consumed
	pos      int
	err      error  // of src, once it failed or ended
	str      []byte // scratch for a string or number
	consumed int64  // bytes before buf, for errors
	depth    int    // of the objects and arrays being read
}

// maxDepth bounds the nesting of an answer, as encoding/json's.
const maxDepth = 10000

// enter and leave count the nesting.
func (d *decoder) enter() error {
	if d.depth++; d.depth > maxDepth {
		return d.syntax("nested too deep")
	}
	return nil
}

func (d *decoder) leave() { d.depth-- }

func (d *decoder) syntax(what string) error {
	return fmt.Errorf("%w at byte %d: %s", errSyntax, d.consumed+int64(d.pos), what)
}

// fill reads more of src; false when nothing more comes.
func (d *decoder) fill() bool {
	if d.err != nil {
		return false
	}
	d.consumed += int64(d.pos)
	n := copy(d.buf[:cap(d.buf)], d.buf[d.pos:])
	d.buf, d.pos = d.buf[:n], 0
	for d.err == nil {
		m, err := d.src.Read(d.buf[n:cap(d.buf)])
		d.buf = d.buf[:n+m]
		d.err = err
		if m > 0 {
			return true
		}
	}
	return false
}

// readErr is the error of a read that found nothing more.
func (d *decoder) readErr() error {
	if d.err == nil || errors.Is(d.err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return d.err
}

// next consumes and returns the next byte.
func (d *decoder) next() (byte, error) {
	if d.pos == len(d.buf) && !d.fill() {
		return 0, d.readErr()
	}
	c := d.buf[d.pos]
	d.pos++
	return c, nil
}

// peekSpace skips white space and returns the next byte, unconsumed.
func (d *decoder) peekSpace() (byte, error) {
	for {
		for d.pos < len(d.buf) {
			switch c := d.buf[d.pos]; c {
			case ' ', '\t', '\n', '\r':
				d.pos++
			default:
				return c, nil
			}
		}
		if !d.fill() {
			return 0, d.readErr()
		}
	}
}

// space skips white space and consumes the next byte; io.EOF at the end.
func (d *decoder) space() (byte, error) {
	c, err := d.peekSpace()
	if errors.Is(err, io.ErrUnexpectedEOF) && errors.Is(d.err, io.EOF) {
		return 0, io.EOF
	}
	if err != nil {
		return 0, err
	}
	d.pos++
	return c, nil
}

func (d *decoder) expect(want byte) error {
	c, err := d.peekSpace()
	if err != nil {
		return err
	}
	if c != want {
		return d.syntax(fmt.Sprintf("%q, want %q", c, want))
	}
	d.pos++
	return nil
}

// object reads an object, calling member with each key (valid until the
// member's value is read) to read its value; null is an empty one.
func (d *decoder) object(member func(key []byte) error) error {
	return d.container('{', '}', "an object", func() error {
		if err := d.expect('"'); err != nil {
			return err
		}
		key, err := d.stringBody()
		if err != nil {
			return err
		}
		// Past the colon, a read may refill the buffer the key lies in.
		key = append(d.str[:0], key...)
		d.str = key
		if err := d.expect(':'); err != nil {
			return err
		}
		return member(key)
	})
}

// array reads an array, calling elem to read each element; null is an
// empty one.
func (d *decoder) array(elem func() error) error {
	return d.container('[', ']', "an array", elem)
}

// container reads what opening and closing enclose (named what in errors),
// calling elem to read each element, a value or an object's member; null
// is an empty one.
func (d *decoder) container(opening, closing byte, what string, elem func() error) error {
	if c, err := d.peekSpace(); err != nil {
		return err
	} else if c == 'n' {
		return d.literal("null")
	}
	if err := d.expect(opening); err != nil {
		return err
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	c, err := d.peekSpace()
	if err != nil {
		return err
	}
	if c == closing {
		d.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		c, err := d.space()
		if err != nil {
			return d.eof(err)
		}
		switch c {
		case ',':
		case closing:
			return nil
		default:
			return d.syntax(fmt.Sprintf("%q in %s", c, what))
		}
	}
}

// eof turns the end of the answer inside a value into an unexpected one.
func (d *decoder) eof(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// stringInto reads a string, or null as "".
func (d *decoder) stringInto(s *string) error {
	c, err := d.peekSpace()
	if err != nil {
		return err
	}
	if c == 'n' {
		return d.literal("null")
	}
	if c != '"' {
		return d.syntax(fmt.Sprintf("%q, want a string", c))
	}
	d.pos++
	b, err := d.stringBody()
	*s = string(b)
	return err
}

// stringBody reads the rest of a string after its opening quote, escapes
// resolved: in the read buffer or the scratch buffer, valid until the next
// read.
func (d *decoder) stringBody() ([]byte, error) {
	// The most common case: the whole string, without escapes, already in
	// the buffer, handed out as it lies there, valid as the scratch is.
	for i := d.pos; i < len(d.buf); i++ {
		if c := d.buf[i]; c == '"' {
			s := d.buf[d.pos:i]
			d.pos = i + 1
			return s, nil
		} else if c == '\\' || c < 0x20 {
			break
		}
	}
	d.str = d.str[:0]
	for {
		// The common case: a run without escapes within the buffer.
		start := d.pos
		for d.pos < len(d.buf) {
			c := d.buf[d.pos]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			d.pos++
		}
		d.str = append(d.str, d.buf[start:d.pos]...)
		c, err := d.next()
		if err != nil {
			return nil, err
		}
		switch {
		case c == '"':
			return d.str, nil
		case c < 0x20:
			return nil, d.syntax("control character in a string")
		case c == '\\':
			if err := d.escape(); err != nil {
				return nil, err
			}
		default:
			d.str = append(d.str, c)
		}
	}
}

func (d *decoder) escape() error {
	c, err := d.next()
	if err != nil {
		return err
	}
	switch c {
	case '"', '\\', '/':
		d.str = append(d.str, c)
	case 'b':
		d.str = append(d.str, '\b')
	case 'f':
		d.str = append(d.str, '\f')
	case 'n':
		d.str = append(d.str, '\n')
	case 'r':
		d.str = append(d.str, '\r')
	case 't':
		d.str = append(d.str, '\t')
	case 'u':
		r, err := d.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			// The second half follows as \uXXXX, or the pair is broken.
			r2 := rune(-1)
			for len(d.buf)-d.pos < 2 && d.fill() {
			}
			if len(d.buf)-d.pos >= 2 && d.buf[d.pos] == '\\' && d.buf[d.pos+1] == 'u' {
				d.pos += 2
				if r2, err = d.hex4(); err != nil {
					return err
				}
			}
			if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
				r = pair
			} else {
				d.str = utf8.AppendRune(d.str, utf8.RuneError)
				if r2 < 0 {
					return nil
				}
				if r = r2; utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
			}
		}
		d.str = utf8.AppendRune(d.str, r)
	default:
		return d.syntax(fmt.Sprintf("escape \\%c", c))
	}
	return nil
}

func (d *decoder) hex4() (rune, error) {
	var r rune
	for range 4 {
		c, err := d.next()
		if err != nil {
			return 0, err
		}
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, d.syntax("escape \\u with a non-hex digit")
		}
		r = r<<4 | rune(c)
	}
	return r, nil
}

// number reads a JSON number, valid until the next read.
func (d *decoder) number() ([]byte, error) {
	// The most common case, as in stringBody: the number ends in the buffer.
	for i := d.pos; i < len(d.buf); i++ {
		if !numberByte(d.buf[i]) {
			if i == d.pos {
				break
			}
			num := d.buf[d.pos:i]
			d.pos = i
			return num, nil
		}
	}
	d.str = d.str[:0]
	for {
		for d.pos < len(d.buf) {
			c := d.buf[d.pos]
			if !numberByte(c) {
				if len(d.str) == 0 {
					return nil, d.syntax(fmt.Sprintf("%q, want a number", c))
				}
				return d.str, nil
			}
			d.str = append(d.str, c)
			d.pos++
		}
		if !d.fill() {
			if len(d.str) == 0 || !errors.Is(d.err, io.EOF) {
				return nil, d.readErr()
			}
			return d.str, nil
		}
	}
}

// numberByte reports whether c may be part of a JSON number.
func numberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func (d *decoder) literal(word string) error {
	for i := range len(word) {
		c, err := d.next()
		if err != nil {
			return err
		}
		if c != word[i] {
			return d.syntax(fmt.Sprintf("%q, want %s", c, word))
		}
	}
	return nil
}

// skip reads a value of any kind and drops it.
func (d *decoder) skip() error {
	c, err := d.peekSpace()
	if err != nil {
		return err
	}
	switch c {
	case '{':
		return d.object(func([]byte) error { return d.skip() })
	case '[':
		return d.array(d.skip)
	case '"':
		d.pos++
		_, err := d.stringBody()
		return err
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, err = d.number()
	return err
}
