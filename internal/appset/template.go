package appset

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// fastParam is a fasttemplate parameter: {{name}}, spaces allowed.
var fastParam = regexp.MustCompile(`\{\{\s*([^{}\s]+)\s*\}\}`)

// fill replaces the parameters in every string of v, in the
// ApplicationSet's template style, and returns v.
func (g *generator) fill(v any, params map[string]any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			f, err := g.fill(e, params)
			if err != nil {
				return nil, err
			}
			t[k] = f
		}
	case []any:
		for i, e := range t {
			f, err := g.fill(e, params)
			if err != nil {
				return nil, err
			}
			t[i] = f
		}
	case string:
		if !strings.Contains(t, "{{") {
			return t, nil
		}
		if g.goTmpl {
			return g.goTemplate(t, params)
		}
		// fasttemplate leaves a parameter it does not know as written.
		return fastParam.ReplaceAllStringFunc(t, func(m string) string {
			key := fastParam.FindStringSubmatch(m)[1]
			if val, ok := params[key]; ok {
				return fmt.Sprint(val)
			}
			return m
		}), nil
	}
	return v, nil
}

// funcs are sprig's functions as Argo CD offers them: without those that
// read the environment or the network, nor those that make a string or a
// list of any length, which the repository, untrusted, would set.
var funcs = func() template.FuncMap {
	f := maps.Clone(sprig.TxtFuncMap())
	for _, name := range []string{"env", "expandenv", "getHostByName", "repeat", "until", "untilStep", "seq"} {
		delete(f, name)
	}
	return f
}()

// goTemplate executes one string as a Go template over params.
func (g *generator) goTemplate(text string, params map[string]any) (string, error) {
	t, err := template.New("").Funcs(funcs).Option(g.options...).Parse(text)
	if err != nil {
		return "", err
	}
	b := &cappedBuilder{}
	if err := t.Execute(b, params); err != nil {
		return "", err
	}
	return b.String(), nil
}

// maxTemplateOutput bounds what one string of a template may become.
const maxTemplateOutput = 64 << 10

// cappedBuilder is a strings.Builder that refuses to grow past
// maxTemplateOutput.
type cappedBuilder struct{ strings.Builder }

func (b *cappedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxTemplateOutput {
		return 0, fmt.Errorf("a template's output is above %d bytes", maxTemplateOutput)
	}
	return b.Builder.Write(p)
}
