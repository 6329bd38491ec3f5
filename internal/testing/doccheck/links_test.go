package doccheck

import (
	"path"
	"regexp"
	"strings"
	"testing"
)

var (
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\[[^\]\n]*\]\(([^)\s]+)\)`)
	anyURL     = regexp.MustCompile(`https?://[^\s)\]"'` + "`" + `<>]+`)
)

// quotedURLs are the only outside addresses a page may hold: texts the
// host prints, which a page quotes as they are.
var quotedURLs = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema": true, // the "$schema" of a shape in an error message
}

// TestMarkdownLinks: every relative link of every Markdown page names a
// file or folder of the tree, and its #anchor (or a page's own) names a
// heading of the page it points at; no link leaves the repository.
func TestMarkdownLinks(t *testing.T) {
	r := loadRepo(t)
	for _, rel := range r.withExt(".md") {
		d := r.doc(t, rel)
		text := inlineCode.ReplaceAllString(d.prose(), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			if err := r.checkLink(t, rel, m[1]); err != "" {
				t.Errorf("%s: link %q: %s", rel, m[1], err)
			}
		}
	}
}

// checkLink says what is wrong with the link target of page rel, or "".
func (r *repo) checkLink(t *testing.T, rel, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return "the docs cite only files inside the repository"
	}
	file, frag, _ := strings.Cut(target, "#")
	dest := rel
	if file != "" {
		dest = path.Clean(path.Join(path.Dir(rel), file))
		if !r.paths[dest] {
			return dest + " is not in the tree"
		}
	}
	if frag != "" && strings.HasSuffix(dest, ".md") && !r.doc(t, dest).hasAnchor(frag) {
		return dest + " has no heading with the anchor #" + frag
	}
	return ""
}

// TestNoOutsideURLs: no Markdown page holds an http(s) address outside
// the machine, but for placeholders (http://HOST, *.example.com) and the
// texts of quotedURLs.
func TestNoOutsideURLs(t *testing.T) {
	r := loadRepo(t)
	for _, rel := range r.withExt(".md") {
		for _, raw := range anyURL.FindAllString(strings.Join(r.doc(t, rel).lines, "\n"), -1) {
			if !allowedURL(raw) {
				t.Errorf("%s: %s: the docs cite only files inside the repository (a text the host prints may be quoted: add it to quotedURLs)", rel, raw)
			}
		}
	}
}

func allowedURL(raw string) bool {
	raw = strings.TrimRight(raw, ".,;:")
	if quotedURLs[raw] {
		return true
	}
	h := hostOf(raw)
	switch {
	case h == "127.0.0.1" || h == "localhost" || h == "::1" || h == "0.0.0.0":
		return true
	case !strings.Contains(h, "."): // a placeholder: http://x, http://HOST
		return true
	case h == "example.com" || strings.HasSuffix(h, ".example.com") || strings.HasSuffix(h, ".example"):
		return true
	}
	return false
}

// hostOf is the host of an address, without its port, also where the
// port is a placeholder (http://127.0.0.1:PORT), which net/url refuses.
func hostOf(raw string) string {
	_, rest, _ := strings.Cut(raw, "://")
	rest, _, _ = strings.Cut(rest, "/")
	rest, _, _ = strings.Cut(rest, "?")
	if strings.HasPrefix(rest, "[") {
		h, _, _ := strings.Cut(rest[1:], "]")
		return h
	}
	h, _, _ := strings.Cut(rest, ":")
	return h
}
