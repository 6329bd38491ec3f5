package doccheck

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// repo is the working tree as git sees it: the files it tracks (and the
// untracked ones it does not ignore) and the folders that hold them.
type repo struct {
	root  string
	files []string        // slash paths from the root
	paths map[string]bool // every file and folder
	top   map[string]bool // the folders at the root
	docs  map[string]*doc // Markdown pages read so far, by path
}

func loadRepo(t *testing.T) *repo {
	t.Helper()
	root := wasmbuild.Root()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (the doc check needs a git checkout)", err)
	}
	r := &repo{root: root, paths: map[string]bool{}, top: map[string]bool{}, docs: map[string]*doc{}}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if _, err := os.Lstat(filepath.Join(root, rel)); err != nil {
			continue // deleted in the working tree
		}
		r.files = append(r.files, rel)
		r.paths[rel] = true
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			r.paths[d] = true
		}
		if i := strings.IndexByte(rel, '/'); i > 0 {
			r.top[rel[:i]] = true
		}
	}
	return r
}

// withExt lists the files whose names end in ext.
func (r *repo) withExt(ext string) []string {
	var out []string
	for _, f := range r.files {
		if strings.HasSuffix(f, ext) {
			out = append(out, f)
		}
	}
	return out
}

// doc is a Markdown page: its lines, which of them are inside fenced
// code blocks, and its headings.
type doc struct {
	lines    []string
	fenced   []bool
	headings []heading
	labels   []string // the bold lead-ins of paragraphs: **The input's shape.**
}

// boldLead is a paragraph that opens with a bold lead-in, which texts
// cite like a heading.
var boldLead = regexp.MustCompile(`^\*\*([^*]+)\*\*`)

// heading is a Markdown heading: its text as written (without the #s)
// and its anchor as GitHub makes it.
type heading struct {
	text, anchor string
}

func (r *repo) doc(t *testing.T, rel string) *doc {
	t.Helper()
	if d, ok := r.docs[rel]; ok {
		return d
	}
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	d := parseDoc(string(b))
	r.docs[rel] = d
	return d
}

func parseDoc(text string) *doc {
	d := &doc{lines: strings.Split(text, "\n")}
	d.fenced = make([]bool, len(d.lines))
	inFence, fence := false, ""
	seen := map[string]int{}
	for i, line := range d.lines {
		trimmed := strings.TrimSpace(line)
		if f := fenceOf(trimmed); f != "" && (!inFence || (f == fence && strings.TrimLeft(trimmed, "`~") == "")) {
			d.fenced[i] = true
			if inFence {
				inFence = false
			} else {
				inFence, fence = true, f
			}
			continue
		}
		d.fenced[i] = inFence
		if inFence {
			continue
		}
		if m := boldLead.FindStringSubmatch(line); m != nil {
			d.labels = append(d.labels, strings.TrimRight(m[1], ".:"))
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := anchor(h)
		if n := seen[a]; n > 0 {
			seen[a]++
			a = a + "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		d.headings = append(d.headings, heading{text: h, anchor: a})
	}
	return d
}

// fenceOf returns the fence a line opens or closes (``` or ~~~, or
// longer), or "". A line of backticks followed by text with a backtick
// in it is inline code, not a fence (CommonMark: a backtick fence's info
// string has no backticks): ```` ```text ```` at the start of a line.
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 && !(c == "`" && strings.Contains(line[n:], "`")) {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// anchor is GitHub's anchor of a heading: lower case, spaces to
// hyphens, every character but letters, digits, hyphens and underscores
// left out.
func anchor(h string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(h) {
		switch {
		case c == ' ':
			b.WriteRune('-')
		case c == '-' || c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c):
			b.WriteRune(c)
		}
	}
	return b.String()
}

// prose is the text of a page outside its fenced code blocks, one
// string, with each line break kept.
func (d *doc) prose() string {
	var b strings.Builder
	for i, l := range d.lines {
		if !d.fenced[i] {
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// hasSection reports whether the page has a heading (or a bold lead-in
// of a paragraph) that name begins:
// compared without case, backticks, a section number in front (4.1,
// "2.") or surrounding space, so that "The built-in HTTP activity"
// names "### 7.2 The built-in HTTP activity".
func (d *doc) hasSection(name string) bool {
	want := normHeading(name)
	for _, h := range d.headings {
		if strings.HasPrefix(normHeading(h.text), want) {
			return true
		}
	}
	for _, l := range d.labels {
		if strings.HasPrefix(normHeading(l), want) {
			return true
		}
	}
	return false
}

// hasNumber reports whether the page has a heading numbered n ("1.1",
// "8"): "### 1.1 Start-up" or "## 8. Op keys".
func (d *doc) hasNumber(n string) bool {
	for _, h := range d.headings {
		if strings.HasPrefix(h.text, n+" ") || strings.HasPrefix(h.text, n+". ") {
			return true
		}
	}
	return false
}

var sectionNumber = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*\.?\s+`)

func normHeading(s string) string {
	s = strings.ReplaceAll(s, "`", "")
	s = strings.Join(strings.Fields(s), " ")
	s = sectionNumber.ReplaceAllString(s, "")
	return strings.ToLower(s)
}

func (d *doc) hasAnchor(a string) bool {
	for _, h := range d.headings {
		if h.anchor == a {
			return true
		}
	}
	return false
}
