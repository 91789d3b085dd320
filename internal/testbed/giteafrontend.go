package testbed

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GiteaFrontend gives a Gitea a stand-in for the web frontend a source
// build lacks (the module holds the frontend's sources, not its built
// bundle, and building it needs a newer Node.js and pnpm): the
// stylesheets, served from the module's plain CSS, and a script that
// renders each mermaid code block with Mermaid's own browser bundle, as
// Gitea's frontend does. Release builds of Gitea render Mermaid
// themselves. The server then needs npm on first use (EnsureMermaid).
func GiteaFrontend() Option {
	return func(o *options) { o.giteaFrontend = true }
}

// giteaMermaidFooter is Gitea's custom/footer template: it renders each
// mermaid block of the page's markup the way Gitea's frontend
// (web_src/js/markup/mermaid.ts) does, with the same configuration, but
// puts the SVG in the page rather than in an iframe, so that the
// rendered page's markup holds it. A block Mermaid refuses shows its
// error above the source, as Gitea's does. The page's hash
// #testbed-open-charts opens the <details> that hold a chart, for a
// screenshot.
const giteaMermaidFooter = `<script src="{{AssetUrlPrefix}}/testbed/mermaid.min.js"></script>
<script>
(async () => {
  const blocks = [...document.querySelectorAll('.markup code.language-mermaid')];
  if (!blocks.length || !window.mermaid) return;
  if (location.hash === '#testbed-open-charts') {
    for (const code of blocks) for (let d = code.closest('details'); d; d = d.parentElement.closest('details')) d.open = true;
  }
  mermaid.initialize({startOnLoad: false, theme: 'neutral', securityLevel: 'strict', suppressErrorRendering: true});
  let n = 0;
  for (const code of blocks) {
    const pre = code.closest('pre');
    try {
      const {svg} = await mermaid.render('testbed-mermaid-' + n++, code.textContent);
      const block = document.createElement('div');
      block.className = 'mermaid-block';
      block.innerHTML = svg;
      pre.replaceWith(block);
    } catch (err) {
      pre.classList.remove('is-loading');
      const msg = document.createElement('pre');
      msg.className = 'ui message error markup-block-error';
      msg.textContent = err.message || String(err);
      pre.before(msg);
    }
  }
})();
</script>
`

// giteaUtilityHeader is Gitea's custom/header template: the Tailwind
// utility classes its pages use most, which the built stylesheet would
// hold; tw-hidden above all, which hides a comment's raw source.
const giteaUtilityHeader = `<style>
.tw-hidden { display: none !important; }
.tw-flex { display: flex; }
.tw-flex-1 { flex: 1 1 0%; }
.tw-flex-col { flex-direction: column; }
.tw-flex-wrap { flex-wrap: wrap; }
.tw-shrink-0 { flex-shrink: 0; }
.tw-items-center { align-items: center; }
.tw-justify-between { justify-content: space-between; }
.tw-justify-end { justify-content: flex-end; }
.tw-gap-2 { gap: 0.5rem; }
.tw-m-0 { margin: 0; }
.tw-mr-0 { margin-right: 0; }
.tw-mr-1 { margin-right: 0.25rem; }
.tw-mr-2 { margin-right: 0.5rem; }
.tw-ml-1 { margin-left: 0.25rem; }
.tw-ml-auto { margin-left: auto; }
.tw-mt-2 { margin-top: 0.5rem; }
.tw-mb-2 { margin-bottom: 0.5rem; }
.tw-break-anywhere { overflow-wrap: anywhere; }
.tw-align-middle { vertical-align: middle; }
.tw-text-right { text-align: right; }
.tw-text-xs { font-size: 0.75rem; }
.tw-font-semibold { font-weight: 600; }
</style>
`

// writeGiteaFrontend writes the stand-in frontend into Gitea's custom
// directory: the header and footer templates, Mermaid's bundle, and the
// module's stylesheets where the pages look for the built ones.
func writeGiteaFrontend(custom string, tools GiteaTools) error {
	templates := filepath.Join(custom, "templates", "custom")
	if err := writeCustomFile(filepath.Join(templates, "header.tmpl"), []byte(giteaUtilityHeader)); err != nil {
		return err
	}
	if err := writeCustomFile(filepath.Join(templates, "footer.tmpl"), []byte(giteaMermaidFooter)); err != nil {
		return err
	}
	bundle, err := os.ReadFile(tools.Mermaid)
	if err != nil {
		return err
	}
	if err := writeCustomFile(filepath.Join(custom, "public", "assets", "testbed", "mermaid.min.js"), bundle); err != nil {
		return err
	}
	// The pages load Gitea's scripts with an onerror that alerts, and an
	// alert stops a headless browser: empty scripts stand in for them.
	for _, js := range []string{"iife.js", "index.js"} {
		if err := writeCustomFile(filepath.Join(custom, "public", "assets", "js", js), nil); err != nil {
			return err
		}
	}
	// Pages link css/index.css and css/theme-<name>.css; the sources are
	// plain CSS that @import their parts, themes in a directory of their
	// own.
	css := filepath.Join(tools.Source, "web_src", "css")
	dst := filepath.Join(custom, "public", "assets", "css")
	return filepath.WalkDir(css, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".css") {
			return err
		}
		rel, err := filepath.Rel(css, path)
		if err != nil {
			return err
		}
		if filepath.Dir(rel) == "themes" {
			rel = filepath.Base(rel)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return writeCustomFile(filepath.Join(dst, rel), data)
	})
}

// writeCustomFile writes data to path, creating its directory.
func writeCustomFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// MermaidPage is what a page's markup shows of its mermaid blocks once
// the stand-in frontend ran.
type MermaidPage struct {
	// Pending counts the blocks still shown as source: the script did not
	// run, or did not reach them.
	Pending int
	// Rendered counts the blocks replaced by an SVG, XYCharts those of
	// them that are xycharts.
	Rendered, XYCharts int
	// Errors are the messages shown for blocks Mermaid refused.
	Errors []string
}

// ReadMermaidPage reads the blocks of a page's markup (Chromium.DOM).
func ReadMermaidPage(dom string) MermaidPage {
	var p MermaidPage
	p.Pending = strings.Count(dom, `<code class="chroma language-mermaid`)
	for _, block := range strings.Split(dom, `<div class="mermaid-block">`)[1:] {
		if !strings.HasPrefix(block, "<svg") {
			continue
		}
		p.Rendered++
		svg, _, _ := strings.Cut(block, "</svg>")
		if strings.Contains(svg, `aria-roledescription="xychart"`) {
			p.XYCharts++
		}
	}
	for _, part := range strings.Split(dom, `markup-block-error">`)[1:] {
		msg, _, _ := strings.Cut(part, "</pre>")
		p.Errors = append(p.Errors, msg)
	}
	return p
}
