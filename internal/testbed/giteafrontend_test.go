package testbed

import (
	"reflect"
	"testing"
)

func TestReadMermaidPage(t *testing.T) {
	const (
		xychart   = `<div class="mermaid-block"><svg id="m0" aria-roledescription="xychart"><g class="plot"></g></svg></div>`
		flowchart = `<div class="mermaid-block"><svg id="m1" aria-roledescription="flowchart-v2"></svg></div>`
		pending   = `<div class="code-block-container"><pre class="code-block is-loading"><code class="chroma language-mermaid display">xychart-beta</code></pre></div>`
		refused   = `<pre class="ui message error markup-block-error">Parse error on line 2:
...</pre>` + pending
		script = `<script>document.querySelectorAll('.markup code.language-mermaid')</script>`
	)
	for _, tt := range []struct {
		name string
		dom  string
		want MermaidPage
	}{
		{"nothing", "<html></html>" + script, MermaidPage{}},
		{"xycharts", xychart + "<p>text</p>" + xychart + script, MermaidPage{Rendered: 2, XYCharts: 2}},
		{"another diagram", xychart + flowchart, MermaidPage{Rendered: 2, XYCharts: 1}},
		{"not run", pending + pending + script, MermaidPage{Pending: 2}},
		{"refused", xychart + refused, MermaidPage{Pending: 1, Rendered: 1, XYCharts: 1, Errors: []string{"Parse error on line 2:\n..."}}},
		{"an empty block", `<div class="mermaid-block"></div>`, MermaidPage{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadMermaidPage(tt.dom); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ReadMermaidPage() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
