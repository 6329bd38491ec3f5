package lineage

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxKeyLen is the maximum length of a key, in characters (Unicode code
// points, not bytes).
const MaxKeyLen = 300

// Rule ids name the rule a *StepIDError broke. They are stable and short,
// meant for programs; Error gives the words for users.
const (
	RuleEmpty       = "empty"        // a name must not be empty
	RuleText        = "text"         // a name must be UTF-8 without control characters
	RuleDot         = "dot"          // a name must not contain "."
	RuleSpace       = "whitespace"   // a name must not contain whitespace
	RuleNumeric     = "numeric"      // a name must not be all ASCII digits
	RuleTaskSegment = "task-segment" // a name must not be "t" and digits
	RuleTooLong     = "too-long"     // the full key must fit in MaxKeyLen
	RuleDuplicate   = "duplicate"    // a name must be unique in its scope
)

// StepIDError reports an op whose key cannot be minted. Nothing was
// consumed in the scope. Use errors.As to get at the fields.
type StepIDError struct {
	Scope string // scope key ("" = root)
	Name  string // the user-given name; "" for an unnamed op
	Rule  string // one of the Rule* constants
}

// Error describes the scope, the name and the broken rule in words.
func (e *StepIDError) Error() string {
	scope := e.Scope
	if scope == "" {
		scope = "root"
	}
	if e.Name == "" && e.Rule == RuleTooLong {
		return fmt.Sprintf("unnamed op in scope %s: its key would be longer than %d characters (nesting too deep)", scope, MaxKeyLen)
	}
	return fmt.Sprintf("step id %q in scope %s: %s", e.Name, scope, ruleText(e.Rule))
}

func ruleText(rule string) string {
	switch rule {
	case RuleEmpty:
		return "a name must not be empty"
	case RuleText:
		return "a name must be valid UTF-8 without control characters (such as NUL)"
	case RuleDot:
		return `a name must not contain "." (dots separate scopes)`
	case RuleSpace:
		return "a name must not contain whitespace"
	case RuleNumeric:
		return "a name must not be all digits (digits are positions)"
	case RuleTaskSegment:
		return `a name must not be "t" followed by digits (reserved for spawned tasks)`
	case RuleTooLong:
		return fmt.Sprintf("the full key must be at most %d characters", MaxKeyLen)
	case RuleDuplicate:
		return "the name is already used in this scope (step, task and fork names share a scope)"
	}
	return "rule " + rule
}

// ValidateName checks a user-given name against every rule for an op in
// the scope with key scopeKey (the full key's length depends on the scope).
// It returns a *StepIDError or nil. Uniqueness is checked by Op, Spawn and
// Fork, which hold the scope's names.
func ValidateName(scopeKey, name string) error {
	rule := ""
	switch {
	case name == "":
		rule = RuleEmpty
	case strings.Contains(name, "."):
		rule = RuleDot
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		rule = RuleSpace
	case !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0:
		rule = RuleText
	case allDigits(name):
		rule = RuleNumeric
	case name[0] == 't' && allDigits(name[1:]):
		rule = RuleTaskSegment
	case keyLen(scopeKey)+keyLen(name)+sepLen(scopeKey) > MaxKeyLen:
		rule = RuleTooLong
	default:
		return nil
	}
	return &StepIDError{Scope: scopeKey, Name: name, Rule: rule}
}

// allDigits reports whether s is non-empty and all ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func keyLen(s string) int { return utf8.RuneCountInString(s) }

func sepLen(scope string) int {
	if scope == "" {
		return 0
	}
	return 1
}

func itoa(i int) string { return strconv.Itoa(i) }
