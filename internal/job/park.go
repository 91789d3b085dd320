package job

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"unique"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// parkedEvidence is the evidence of a plan's resources, set aside while the
// repository is rendered. Rendering never reads it, and it is the larger
// part of a plan: at 20,000 targets, some 60 MB of usage points, figures
// and explanations, held while rendering needs its most. Parked, it is one
// gzipped JSON stream of a few MB, put back once the rendering is done.
type parkedEvidence struct {
	data []byte
	// n is how many resources it holds evidence for, nil ones included.
	n int
}

// parkEvidence takes the evidence out of p's resources. When it cannot be
// encoded (a figure JSON cannot hold), p keeps all of it and nil is
// returned: parking saves memory, it never changes what the run says.
func parkEvidence(p *plan.Plan) *parkedEvidence {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil
	}
	enc := json.NewEncoder(zw)
	n := 0
	for r := range resourcesOf(p) {
		// A nil pointer is written as null, so that each resource finds
		// its own on the way back.
		if enc.Encode(r.Evidence) != nil {
			return nil
		}
		n++
	}
	if zw.Close() != nil {
		return nil
	}
	for r := range resourcesOf(p) {
		r.Evidence = nil
	}
	return &parkedEvidence{data: buf.Bytes(), n: n}
}

// restore puts the evidence back into p, whose resources must be those it
// was parked from, in the same order.
func (pe *parkedEvidence) restore(p *plan.Plan) error {
	if pe == nil {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(pe.data))
	if err != nil {
		return fmt.Errorf("restoring the evidence: %w", err)
	}
	dec := json.NewDecoder(zr)
	n := 0
	for r := range resourcesOf(p) {
		var ev *plan.Evidence
		if err := dec.Decode(&ev); err != nil {
			return fmt.Errorf("restoring the evidence of resource %d: %w", n, err)
		}
		if ev != nil {
			interned(ev)
		}
		r.Evidence = ev
		n++
	}
	if _, err := dec.Token(); n != pe.n || !errors.Is(err, io.EOF) {
		return fmt.Errorf("restoring the evidence: %d resources parked, %d in the plan", pe.n, n)
	}
	pe.data = nil
	return nil
}

// resourcesOf yields every resource of p's items, in order.
func resourcesOf(p *plan.Plan) iter.Seq[*plan.Resource] {
	return func(yield func(*plan.Resource) bool) {
		for i := range p.Items {
			for r := range p.Items[i].AllResources() {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// interned gives ev's strings their canonical copies: decoding made one of
// each for every resource, and the same few texts ("7d", the resolution,
// the history's split) repeat across all of them.
func interned(ev *plan.Evidence) {
	v := reflect.ValueOf(ev).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.String && f.Len() > 0 {
			f.SetString(unique.Make(f.String()).Value())
		}
	}
}
