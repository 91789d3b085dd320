package appset

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// funcMap is the functions a goTemplate of this ApplicationSet may call,
// each spending from its budget: sprig's (less removed), and the builtins
// that read or make strings of any length (print, printf, println, html,
// js, urlquery, and the comparisons, which read both their arguments).
// Every one refuses an input or an output above maxTemplateOutput, and
// those whose output can be far larger than their input (a width, a
// separator, a replacement repeated) are refused before they are called
// when it would be.
func (g *generator) funcMap() template.FuncMap {
	if g.funcs != nil {
		return g.funcs
	}
	all := template.FuncMap{
		"print": fmt.Sprint, "printf": fmt.Sprintf, "println": fmt.Sprintln,
		"html": template.HTMLEscaper, "js": template.JSEscaper, "urlquery": template.URLQueryEscaper,
		"eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
	}
	for name, f := range sprigFuncs {
		all[name] = f
	}
	g.funcs = template.FuncMap{rangeBudgetFunc: g.rangeBudget}
	for name, f := range all {
		g.funcs[name] = g.wrap(name, f)
	}
	return g.funcs
}

// rangeBudget spends, before a range runs, what its iterations count:
// cost each, one per element of v or v of them if v is a number.
func (g *generator) rangeBudget(cost int64, v any) (any, error) {
	n := int64(1)
	r := reflect.ValueOf(v)
	for r.Kind() == reflect.Interface || r.Kind() == reflect.Pointer {
		r = r.Elem()
	}
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = max(r.Int(), 0)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n = int64(min(r.Uint(), math.MaxInt64))
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		n = int64(r.Len())
	}
	if cost > 0 && n > g.budget.left()/cost {
		return nil, fmt.Errorf("%w: a range of %d iterations", ErrBudget, n)
	}
	return v, g.budget.spend(n * cost)
}

// outputSize estimates, before a function is called, what it makes beyond
// its input, for those that can make far more: (arguments) -> bytes.
var outputSize = map[string]func(args []any) int64{
	"printf": func(args []any) int64 {
		format, _ := args[0].(string)
		rest, _ := args[1].([]any)
		return printfSize(format, rest)
	},
	"indent":  indentSize,
	"nindent": indentSize,
	"replace": func(args []any) int64 {
		old, _ := args[0].(string)
		repl, _ := args[1].(string)
		src, _ := args[2].(string)
		if old == "" {
			return int64(len(src)+1) * int64(len(repl))
		}
		return int64(strings.Count(src, old)) * int64(len(repl))
	},
	"regexReplaceAll":            regexSize,
	"mustRegexReplaceAll":        regexSize,
	"regexReplaceAllLiteral":     regexSize,
	"mustRegexReplaceAllLiteral": regexSize,
	"join": func(args []any) int64 {
		sep, _ := args[0].(string)
		r := reflect.ValueOf(args[1])
		if r.Kind() != reflect.Slice && r.Kind() != reflect.Array {
			return 0
		}
		return int64(r.Len()) * int64(len(sep))
	},
	"wrapWith": func(args []any) int64 {
		width, _ := args[0].(int)
		sep, _ := args[1].(string)
		s, _ := args[2].(string)
		return int64(len(s)/max(width, 1)+1) * int64(len(sep))
	},
	// uniq compares every element with those kept: its work is square.
	"uniq":     squareSize,
	"mustUniq": squareSize,
}

func indentSize(args []any) int64 {
	spaces, _ := args[0].(int)
	s, _ := args[1].(string)
	return int64(max(spaces, 0)) * int64(strings.Count(s, "\n")+1)
}

func squareSize(args []any) int64 {
	r := reflect.ValueOf(args[0])
	if r.Kind() != reflect.Slice && r.Kind() != reflect.Array {
		return 0
	}
	return int64(r.Len()) * int64(r.Len())
}

// regexSize bounds what a replacement makes: each match replaced, and each
// $ of the replacement expanding to at most the whole match.
func regexSize(args []any) int64 {
	expr, _ := args[0].(string)
	s, _ := args[1].(string)
	repl, _ := args[2].(string)
	re, err := regexp.Compile(expr)
	if err != nil {
		return 0 // the call refuses it
	}
	matches := re.FindAllStringIndex(s, -1)
	return int64(len(matches))*int64(len(repl)) + int64(strings.Count(repl, "$"))*int64(len(s))
}

// printfSize bounds what fmt.Sprintf(format, args...) makes: each verb its
// width or precision and four times its argument (%q and %x escape), a
// verb whose width is an argument (*) or a number beyond reason more than
// any budget.
func printfSize(format string, args []any) int64 {
	const refused = math.MaxInt64 / 4
	n := int64(len(format))
	arg := 0
	index := func(i int) int {
		if i < len(format) && format[i] == '[' {
			end := strings.IndexByte(format[i:], ']')
			if end < 0 {
				return i
			}
			if k, err := strconv.Atoi(format[i+1 : i+end]); err == nil {
				arg = k - 1
			}
			return i + end + 1
		}
		return i
	}
	number := func(i int) (int, int64) {
		if i < len(format) && format[i] == '*' {
			return i + 1, refused
		}
		start := i
		for i < len(format) && format[i] >= '0' && format[i] <= '9' {
			i++
		}
		if i == start {
			return i, 0
		}
		v, err := strconv.ParseInt(format[start:i], 10, 32)
		if err != nil {
			return i, refused
		}
		return i, v
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		i = index(i)
		var width, prec int64
		i, width = number(i)
		if i < len(format) && format[i] == '.' {
			i = index(i + 1)
			i, prec = number(i)
		}
		i = index(i)
		if width >= refused || prec >= refused {
			return refused
		}
		if i >= len(format) || format[i] == '%' {
			continue
		}
		var size int64 = nodeCost
		if arg >= 0 && arg < len(args) {
			size = sizeOf(args[arg], maxTemplateOutput)
		}
		arg++
		n += max(width, prec) + 4*size
	}
	return n
}

// wrap returns f spending from the budget: its step and its input before
// the call, refused above maxTemplateOutput, as its estimated output
// (outputSize) is; its output after, refused above maxTemplateOutput.
// Refusals panic, which text/template returns as the call's error.
func (g *generator) wrap(name string, f any) any {
	fv := reflect.ValueOf(f)
	ft := fv.Type()
	estimate := outputSize[name]
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		in := int64(stepCost)
		vals := make([]any, len(args))
		for i, a := range args {
			vals[i] = a.Interface()
			in += sizeOf(vals[i], maxTemplateOutput)
		}
		if in > maxTemplateOutput {
			panic(fmt.Errorf("%w: %s reads more than %d bytes", ErrBudget, name, maxTemplateOutput))
		}
		if estimate != nil {
			if out := estimate(vals); out > maxTemplateOutput {
				panic(fmt.Errorf("%w: %s would make more than %d bytes", ErrBudget, name, maxTemplateOutput))
			}
		}
		if err := g.budget.spend(in); err != nil {
			panic(err)
		}
		var out []reflect.Value
		if ft.IsVariadic() {
			out = fv.CallSlice(args)
		} else {
			out = fv.Call(args)
		}
		if len(out) > 0 {
			size := sizeOf(out[0].Interface(), maxTemplateOutput)
			if size > maxTemplateOutput {
				panic(fmt.Errorf("%w: %s makes more than %d bytes", ErrBudget, name, maxTemplateOutput))
			}
			if err := g.budget.spend(size); err != nil {
				panic(err)
			}
		}
		return out
	}).Interface()
}

// The comparisons, as text/template's builtins compare: basic values of
// one kind, integers signed or not, and eq true if the first argument
// equals any of the others. They are replaced so that their arguments
// are spent like any function's.

func eq(a any, others ...any) (bool, error) {
	if len(others) == 0 {
		return false, fmt.Errorf("missing argument for comparison")
	}
	for _, b := range others {
		c, err := compare(a, b, false)
		if err != nil {
			return false, err
		}
		if c == 0 {
			return true, nil
		}
	}
	return false, nil
}

func ne(a, b any) (bool, error) {
	c, err := compare(a, b, false)
	return c != 0, err
}

func lt(a, b any) (bool, error) {
	c, err := compare(a, b, true)
	return c < 0, err
}

func le(a, b any) (bool, error) {
	c, err := compare(a, b, true)
	return c <= 0, err
}

func gt(a, b any) (bool, error) {
	c, err := compare(a, b, true)
	return c > 0, err
}

func ge(a, b any) (bool, error) {
	c, err := compare(a, b, true)
	return c >= 0, err
}

// compare returns -1, 0 or 1 as a is below, equal to or above b; without
// order, 0 or 1 as a equals b or not.
func compare(a, b any, order bool) (int, error) {
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	ka, kb := kindOf(ra), kindOf(rb)
	switch {
	case ka == intKind && kb == intKind:
		return cmp3(ra.Int(), rb.Int()), nil
	case ka == uintKind && kb == uintKind:
		return cmp3(ra.Uint(), rb.Uint()), nil
	case ka == intKind && kb == uintKind:
		if ra.Int() < 0 {
			return -1, nil
		}
		return cmp3(uint64(ra.Int()), rb.Uint()), nil
	case ka == uintKind && kb == intKind:
		if rb.Int() < 0 {
			return 1, nil
		}
		return cmp3(ra.Uint(), uint64(rb.Int())), nil
	case ka != kb:
		if !order && (!ra.IsValid() || !rb.IsValid()) {
			return cmpBool(a == b), nil // nil equals only nil
		}
		return 0, fmt.Errorf("incompatible types for comparison")
	case ka == floatKind:
		return cmp3(ra.Float(), rb.Float()), nil
	case ka == stringKind:
		return strings.Compare(ra.String(), rb.String()), nil
	case order:
		return 0, fmt.Errorf("invalid type for comparison")
	case ka == boolKind:
		return cmpBool(ra.Bool() == rb.Bool()), nil
	case ka == complexKind:
		return cmpBool(ra.Complex() == rb.Complex()), nil
	}
	if !ra.IsValid() {
		return 0, nil // both nil
	}
	if !ra.Type().Comparable() || !rb.Type().Comparable() {
		return 0, fmt.Errorf("non-comparable types %s: %v, %s: %v", ra.Type(), a, rb.Type(), b)
	}
	return cmpBool(a == b), nil
}

type valueKind int

const (
	otherKind valueKind = iota
	invalidKind
	boolKind
	intKind
	uintKind
	floatKind
	complexKind
	stringKind
)

func kindOf(r reflect.Value) valueKind {
	switch r.Kind() {
	case reflect.Invalid:
		return invalidKind
	case reflect.Bool:
		return boolKind
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind
	case reflect.Float32, reflect.Float64:
		return floatKind
	case reflect.Complex64, reflect.Complex128:
		return complexKind
	case reflect.String:
		return stringKind
	}
	return otherKind
}

func cmp3[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(equal bool) int {
	if equal {
		return 0
	}
	return 1
}
