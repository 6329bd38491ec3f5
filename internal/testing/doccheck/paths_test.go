package doccheck

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codeExts are the source files whose comments and messages the doc
// check reads for the docs they name.
var codeExts = []string{".go", ".rs", ".c", ".h"}

var (
	// tokenSep splits a text into the words that may be paths.
	tokenSep = regexp.MustCompile("[\\s`()\\[\\]\"',;=<>|]+")
	// mdName is a Markdown file a source file names.
	mdName = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b`)
	// commentBreak is a line break inside a run of // comments.
	commentBreak = regexp.MustCompile(`\n[ \t]*//[!/]?[ \t]?`)
	// sectionRef is a page cited with a section's name: docs/design.md,
	// "Ids" and docs/design.md ("Ids").
	sectionRef = regexp.MustCompile("([A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md)`?,?\\s+\\(?\"([^\"]+)\"")
	// numberRef is a page cited with a section's number: abi/README.md §1.1.
	// goIdent is a Go name after a package path: internal/testing/hosttest.RunModule.
	goIdent   = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_]*$`)
	numberRef = regexp.MustCompile("([A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md)`?,?\\s+§\\s?([0-9]+(?:\\.[0-9]+)*)")
)

// TestRepoPaths: every repository path a Markdown page names (in
// backticks, in prose or in a command: a page of docs/, a Go file of
// host/, examples/race, ./store/...) exists, and so does every Markdown page a
// source file names in a comment or a message.
func TestRepoPaths(t *testing.T) {
	r := loadRepo(t)
	for _, rel := range r.withExt(".md") {
		for _, tok := range tokenSep.Split(strings.Join(r.doc(t, rel).lines, "\n"), -1) {
			if p, ok := r.pathToken(tok); ok && !r.exists(rel, p) {
				t.Errorf("%s names %s, which is not in the tree", rel, p)
			}
		}
	}
	for _, rel := range r.codeFiles() {
		for _, p := range mdName.FindAllString(r.read(t, rel), -1) {
			if !r.exists(rel, strings.TrimPrefix(p, "./")) {
				t.Errorf("%s names %s, which is not in the tree", rel, p)
			}
		}
	}
}

// pathToken returns the repository path a word names: one that starts
// with a folder at the root of the tree, or a Markdown file's name.
// Words with placeholders (*, {}, $, …) name no file.
func (r *repo) pathToken(tok string) (string, bool) {
	tok = strings.TrimPrefix(tok, "./")
	tok, _, _ = strings.Cut(tok, "#")
	tok = strings.TrimSuffix(tok, "...")
	tok = strings.TrimRight(tok, ".:!?")
	if tok == "" || strings.ContainsAny(tok, "*{}$…%:") {
		return "", false
	}
	tok = goIdent.ReplaceAllString(tok, "") // internal/testing/guestbuild.Rust names the package
	first, _, hasSlash := strings.Cut(tok, "/")
	if hasSlash && r.top[first] {
		return strings.TrimSuffix(tok, "/"), true
	}
	if !hasSlash && strings.HasSuffix(tok, ".md") {
		return tok, true
	}
	return "", false
}

// exists reports whether p names a file or folder: from the root, or a
// bare name in the folder of the file that names it.
func (r *repo) exists(from, p string) bool {
	if r.paths[p] {
		return true
	}
	return !strings.Contains(p, "/") && r.paths[path.Join(path.Dir(from), p)]
}

func (r *repo) codeFiles() []string {
	var out []string
	for _, ext := range codeExts {
		out = append(out, r.withExt(ext)...)
	}
	return out
}

func (r *repo) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSectionRefs: every section a text cites by name or number, in a
// Markdown page or in a source file's comments (docs/design.md, "Ids";
// RATIONALE.md, "Due runs by index"; abi/README.md §1.1), is a heading
// of that page, so that a heading that moves or changes takes its
// citations with it.
func TestSectionRefs(t *testing.T) {
	r := loadRepo(t)
	texts := map[string]string{}
	for _, rel := range r.withExt(".md") {
		texts[rel] = r.doc(t, rel).prose()
	}
	for _, rel := range r.codeFiles() {
		texts[rel] = commentBreak.ReplaceAllString(r.read(t, rel), " ")
	}
	for rel, text := range texts {
		text = strings.Join(strings.Fields(text), " ")
		for _, m := range sectionRef.FindAllStringSubmatch(text, -1) {
			if d, ok := r.citedDoc(t, rel, m[1]); ok && !d.hasSection(m[2]) {
				t.Errorf("%s cites %s, %q: the page has no such heading", rel, m[1], m[2])
			}
		}
		for _, m := range numberRef.FindAllStringSubmatch(text, -1) {
			if d, ok := r.citedDoc(t, rel, m[1]); ok && !d.hasNumber(m[2]) {
				t.Errorf("%s cites %s §%s: the page has no section of that number", rel, m[1], m[2])
			}
		}
	}
}

// citedDoc is the page a citation in rel names, if it is in the tree
// (TestRepoPaths reports the others).
func (r *repo) citedDoc(t *testing.T, from, p string) (*doc, bool) {
	p = strings.TrimPrefix(p, "./")
	if !strings.Contains(p, "/") && r.paths[path.Join(path.Dir(from), p)] {
		p = path.Join(path.Dir(from), p)
	}
	if !r.paths[p] {
		return nil, false
	}
	return r.doc(t, p), true
}
