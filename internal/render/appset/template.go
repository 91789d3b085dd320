package appset

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
)

// fastParam is a fasttemplate parameter: {{name}}, spaces allowed.
var fastParam = regexp.MustCompile(`\{\{\s*([^{}\s]+)\s*\}\}`)

// fill replaces the parameters in every string of v, in the
// ApplicationSet's template style, and returns v. What it makes is spent
// from the file's budget as it is made.
func (g *generator) fill(v any, params map[string]any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if err := g.budget.spend(nodeCost + int64(len(k))); err != nil {
				return nil, err
			}
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
		if err := g.budget.spend(nodeCost); err != nil {
			return nil, err
		}
		if !strings.Contains(t, "{{") {
			return t, g.budget.spend(int64(len(t)))
		}
		if g.goTmpl {
			return g.goTemplate(t, params)
		}
		return g.fastTemplate(t, params)
	default:
		if err := g.budget.spend(nodeCost); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// fastTemplate fills one string in fasttemplate's style, which leaves a
// parameter it does not know as written.
func (g *generator) fastTemplate(text string, params map[string]any) (string, error) {
	b := &cappedBuilder{budget: g.budget}
	last := 0
	for _, m := range fastParam.FindAllStringSubmatchIndex(text, -1) {
		if _, err := b.WriteString(text[last:m[0]]); err != nil {
			return "", err
		}
		last = m[1]
		val, ok := params[text[m[2]:m[3]]]
		if !ok {
			val = text[m[0]:m[1]]
		}
		s, ok := val.(string)
		if !ok {
			s = fmt.Sprint(val)
		}
		if _, err := b.WriteString(s); err != nil {
			return "", err
		}
	}
	if _, err := b.WriteString(text[last:]); err != nil {
		return "", err
	}
	return b.String(), nil
}

// parsed is a goTemplate string parsed once per ApplicationSet, and what
// one execution of it counts, its loops aside.
type parsed struct {
	t    *template.Template
	cost int64
	err  error
}

// goTemplate executes one string as a Go template over params. Its output
// is spent as it is written, each loop's steps before the loop runs and
// each function's input and output around its call, so that a template
// fails at its budget, not after making what it asks for.
func (g *generator) goTemplate(text string, params map[string]any) (string, error) {
	p := g.parse(text)
	if p.err != nil {
		return "", p.err
	}
	if err := g.budget.spend(p.cost); err != nil {
		return "", err
	}
	b := &cappedBuilder{budget: g.budget}
	if err := p.t.Execute(b, params); err != nil {
		return "", err
	}
	return b.String(), nil
}

// parse parses text once per ApplicationSet: a template is filled once per
// set of parameters.
func (g *generator) parse(text string) *parsed {
	if p, ok := g.parsed[text]; ok {
		return p
	}
	if g.parsed == nil {
		g.parsed = map[string]*parsed{}
	}
	p := &parsed{}
	g.parsed[text] = p
	t := template.New("").Funcs(g.funcMap())
	for _, o := range g.options {
		// Option panics on what it does not know; the file is untrusted.
		if !strings.HasPrefix(o, "missingkey=") || !strings.Contains("default invalid zero error", strings.TrimPrefix(o, "missingkey=")) {
			p.err = fmt.Errorf("goTemplateOptions: %q is not known", o)
			return p
		}
		t = t.Option(o)
	}
	if t, p.err = t.Parse(text); p.err != nil {
		return p
	}
	// A template that defines others may call itself, without end.
	if len(t.Templates()) > 1 {
		p.err = fmt.Errorf("%w: a template that defines templates is not evaluated", errUnsupported)
		return p
	}
	p.t, p.cost = t, stepCost*guard(t.Tree, t.Root)
	return p
}

// rangeBudgetFunc is the function guard puts at the end of every range's
// pipeline: rangeBudget <cost of one iteration> <what is ranged over>.
const rangeBudgetFunc = "appsetRangeBudget"

// guard returns the number of nodes of n, and makes every range in it spend
// its iterations' steps from the budget before it runs: a template's only
// loop is range, over a number or a list of any length.
func guard(tr *parse.Tree, n parse.Node) int64 {
	switch n := n.(type) {
	case nil:
		return 0
	case *parse.ListNode:
		if n == nil {
			return 0
		}
		var c int64 = 1
		for _, x := range n.Nodes {
			c += guard(tr, x)
		}
		return c
	case *parse.ActionNode:
		return 1 + pipeNodes(n.Pipe)
	case *parse.IfNode:
		return 1 + pipeNodes(n.Pipe) + guard(tr, n.List) + guard(tr, n.ElseList)
	case *parse.WithNode:
		return 1 + pipeNodes(n.Pipe) + guard(tr, n.List) + guard(tr, n.ElseList)
	case *parse.RangeNode:
		body := 1 + guard(tr, n.List)
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{
			parse.NewIdentifier(rangeBudgetFunc).SetTree(tr).SetPos(n.Pos),
			&parse.NumberNode{NodeType: parse.NodeNumber, Pos: n.Pos, IsInt: true, Int64: stepCost * body, Text: fmt.Sprint(stepCost * body)},
		}})
		return 1 + pipeNodes(n.Pipe) + body + guard(tr, n.ElseList)
	default:
		return 1
	}
}

// pipeNodes is the number of nodes of a pipeline.
func pipeNodes(p *parse.PipeNode) int64 {
	if p == nil {
		return 0
	}
	var c int64 = 1
	for _, cmd := range p.Cmds {
		c++
		for _, a := range cmd.Args {
			if sub, ok := a.(*parse.PipeNode); ok {
				c += pipeNodes(sub)
			} else {
				c++
			}
		}
	}
	return c
}

// removed are the functions of sprig a template of the repository may not
// call: those that read the environment or the network, those that make a
// string or a list of any length from a number, which the repository,
// untrusted, would set, those that take seconds of CPU (keys,
// certificates, password hashes), and those whose output is random, which
// names no Application that runs.
var removed = []string{
	"env", "expandenv", "getHostByName",
	"repeat", "until", "untilStep", "seq",
	"bcrypt", "htpasswd", "genPrivateKey", "derivePassword", "buildCustomCert",
	"genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
	"randBytes", "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randInt", "shuffle",
}

// sprigFuncs are sprig's functions as Argo CD offers them, less removed.
var sprigFuncs = func() template.FuncMap {
	f := maps.Clone(sprig.TxtFuncMap())
	for _, name := range removed {
		delete(f, name)
	}
	return f
}()

// maxTemplateOutput bounds what one string of a template may become, and
// what one function may read or return.
const maxTemplateOutput = 64 << 10

// cappedBuilder is a strings.Builder that refuses to grow past
// maxTemplateOutput or its budget, spending what it is written.
type cappedBuilder struct {
	strings.Builder
	budget *budget
}

func (b *cappedBuilder) Write(p []byte) (int, error) {
	if err := b.grow(len(p)); err != nil {
		return 0, err
	}
	return b.Builder.Write(p)
}

func (b *cappedBuilder) WriteString(s string) (int, error) {
	if err := b.grow(len(s)); err != nil {
		return 0, err
	}
	return b.Builder.WriteString(s)
}

// grow spends n bytes about to be written, or refuses them.
func (b *cappedBuilder) grow(n int) error {
	if b.Len()+n > maxTemplateOutput {
		return fmt.Errorf("%w: a template's output is above %d bytes", ErrBudget, maxTemplateOutput)
	}
	return b.budget.spend(int64(n))
}
