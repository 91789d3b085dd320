package appset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// The bounds of evaluating the repository, untrusted: one team's file
// must not take the memory or the time every other team's run needs.
const (
	// DefaultFileBudget is what evaluating one file may produce: the
	// bytes of its parameter sets, of its Applications and of every
	// value its templates make, each step of a template counting
	// stepCost.
	DefaultFileBudget int64 = 16 << 20
	// DefaultRunBudget is what evaluating all of the repository's files
	// may produce, counted as DefaultFileBudget is.
	DefaultRunBudget int64 = 64 << 20
	// fileTimeout bounds the time one file's evaluation takes, so that a
	// slow one leaves the run time for the others.
	fileTimeout = 10 * time.Second
	// nodeCost is what a value counts beyond its bytes (a string's) or
	// its elements (a list's or a mapping's): it is what a mapping or an
	// interface costs in memory, and makes an empty value count.
	nodeCost = 16
	// stepCost is what one step of a template counts: a node executed,
	// a function called.
	stepCost = 16
)

// ErrBudget marks a file whose evaluation went past a bound: what it
// produces, the run's budget, or the time it may take.
var ErrBudget = errors.New("above the evaluation budget")

// budget is what the evaluation of one file may still produce, and the
// deadline it must end by. A file's and the run's budgets are both spent.
type budget struct {
	ctx               context.Context
	file              int64
	run               *int64
	fileLimit, runLim int64
}

// spend counts n bytes against the file's and the run's budgets, and fails
// once either is spent or the evaluation's time is up.
func (b *budget) spend(n int64) error {
	if b == nil {
		return nil
	}
	b.file -= n
	*b.run -= n
	switch {
	case b.file < 0:
		return fmt.Errorf("%w: the file produces more than %d bytes", ErrBudget, b.fileLimit)
	case *b.run < 0:
		return fmt.Errorf("%w: the repository's ApplicationSets produce more than %d bytes", ErrBudget, b.runLim)
	}
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrBudget, err)
	}
	return nil
}

// left is the smaller of what the file and the run may still produce.
func (b *budget) left() int64 {
	if b == nil {
		return 1 << 62
	}
	return max(min(b.file, *b.run), 0)
}

// sizeOf is what v counts against a budget: its strings' bytes and
// nodeCost per value, an alias or a shared value counted each time it is
// reached, as it would be written out. It stops counting past limit, so
// that a value holding itself ends the count.
func sizeOf(v any, limit int64) int64 {
	var n int64
	var walk func(r reflect.Value)
	walk = func(r reflect.Value) {
		if n > limit {
			return
		}
		n += nodeCost
		switch r.Kind() {
		case reflect.String:
			n += int64(r.Len())
		case reflect.Interface, reflect.Pointer:
			if !r.IsNil() {
				walk(r.Elem())
			}
		case reflect.Slice, reflect.Array:
			if r.Kind() == reflect.Slice && r.Type().Elem().Kind() == reflect.Uint8 {
				n += int64(r.Len())
				return
			}
			for i := 0; i < r.Len() && n <= limit; i++ {
				walk(r.Index(i))
			}
		case reflect.Map:
			it := r.MapRange()
			for it.Next() && n <= limit {
				walk(it.Key())
				walk(it.Value())
			}
		case reflect.Struct:
			for i := 0; i < r.NumField() && n <= limit; i++ {
				if r.Type().Field(i).IsExported() {
					walk(r.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(v))
	return n
}

// checkExpansion refuses YAML that would decode to more than limit
// bytes, counted as sizeOf counts: an alias counts what its anchor does,
// each time, so that a file of aliases to one long scalar is refused
// before its decoding copies the scalar once per alias. An anchor that
// holds an alias of itself is refused too. Text that does not parse is
// left for the decoder to refuse.
func checkExpansion(data []byte, limit int64) error {
	if bytes.IndexByte(data, '*') < 0 {
		return nil // no alias
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	e := repoindex.Expansion{Weight: func(n *yaml.Node) int64 { return int64(nodeCost + len(n.Value)) }}
	var total int64
	for {
		n := new(yaml.Node)
		if err := dec.Decode(n); err != nil {
			return nil // the end, or an error the decoder reports before expanding
		}
		s := e.Size(n)
		if s < 0 {
			return fmt.Errorf("%w: an anchor holds an alias of itself", ErrBudget)
		}
		if total += s; total > limit {
			return fmt.Errorf("%w: its aliases expand to more than %d bytes", ErrBudget, limit)
		}
	}
}
