package workshop

import (
	"fmt"
	"strings"
)

// The essay skills follow the seed "Session State Schema": thesis ->
// outline -> arguments -> draft, each stage reading the one before from
// the run's state. A revisit's reason (feedback "This task is revisited:
// REASON") changes the thesis: one that asks for an explainer turns the
// essay into one; any other rewords it.

// brief is the essay's `brief` state section: what the person asked for.
type brief struct {
	Topic    string `json:"topic"`
	Audience string `json:"audience"`
	Kind     string `json:"kind"` // "argument" or "explainer"
}

// thesis is the `thesis` state section.
type thesis struct {
	Statement string `json:"statement"`
	Kind      string `json:"kind"`
	Revision  int    `json:"revision"`
	Reason    string `json:"reason,omitempty"`
}

// essayOutline is the essay's `outline` state section.
type essayOutline struct {
	Thesis   string   `json:"thesis"`
	Sections []string `json:"sections"`
}

// argument is one entry of the `arguments` state section.
type argument struct {
	Section  string `json:"section"`
	Claim    string `json:"claim"`
	Evidence string `json:"evidence"`
	Counter  string `json:"counter,omitempty"`
}

func (w *work) brief() (brief, error) {
	b := brief{Topic: "remote work", Audience: "general readers", Kind: "argument"}
	if _, err := w.load("brief", &b); err != nil {
		return b, err
	}
	if b.Kind == "" {
		b.Kind = "argument"
	}
	return b, nil
}

func (w *work) thesis() (thesis, error) {
	th := thesis{Statement: "this essay has no thesis yet", Kind: "argument", Revision: 1}
	_, err := w.load("thesis", &th)
	return th, err
}

func essayThesis(w *work) (string, error) {
	b, err := w.brief()
	if err != nil {
		return "", err
	}
	th := thesis{Kind: b.Kind, Revision: w.round(), Reason: revisitReason(w.cmd.Feedback)}
	if strings.Contains(strings.ToLower(th.Reason), "explainer") {
		th.Kind = "explainer"
	}
	switch {
	case th.Kind == "explainer":
		th.Statement = fmt.Sprintf("%s works through three mechanisms that %s can see in their own week", capitalize(b.Topic), b.Audience)
	case th.Reason != "":
		th.Statement = fmt.Sprintf("%s pays off only when teams redesign how they decide, not where they sit", capitalize(b.Topic))
	default:
		th.Statement = fmt.Sprintf("%s makes most teams more productive, but only when they write things down", capitalize(b.Topic))
	}
	if err := w.save("thesis", th); err != nil {
		return "", err
	}
	if err := w.wrote("essay/stage-1-thesis.md"); err != nil {
		return "", err
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("thesis r%d (%s): %s", th.Revision, th.Kind, th.Statement)}
	out := fmt.Sprintf("Thesis (revision %d, %s):\n%s.", th.Revision, th.Kind, th.Statement)
	if th.Reason != "" {
		out += fmt.Sprintf("\n\nRevised because: %s", th.Reason)
	}
	return out, nil
}

func essayOutlineSkill(w *work) (string, error) {
	th, err := w.thesis()
	if err != nil {
		return "", err
	}
	sections := []string{"the claim, with the strongest example", "the evidence, with numbers", "the best objection, answered"}
	if th.Kind == "explainer" {
		sections = []string{"what the mechanism is", "how it shows up in a normal week", "why it matters and what to try"}
	}
	o := essayOutline{Thesis: th.Statement, Sections: sections}
	if err := w.save("outline", o); err != nil {
		return "", err
	}
	if err := w.wrote("essay/stage-2-outline.md"); err != nil {
		return "", err
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("%d sections for a %s", len(sections), th.Kind)}
	var b strings.Builder
	fmt.Fprintf(&b, "Outline for: %s.\n", th.Statement)
	for i, s := range sections {
		fmt.Fprintf(&b, "%d. %s\n", i+1, capitalize(s))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func essayArguments(w *work) (string, error) {
	var o essayOutline
	if _, err := w.load("outline", &o); err != nil {
		return "", err
	}
	if len(o.Sections) == 0 {
		o.Sections = []string{"the claim"}
	}
	var args []argument
	var b strings.Builder
	fmt.Fprintf(&b, "Argument map for: %s.\n", o.Thesis)
	for i, s := range o.Sections {
		a := argument{
			Section:  s,
			Claim:    pick(s+o.Thesis, []string{"written decisions outlive meetings", "fewer interruptions, longer focus", "hiring beyond one city", "clearer ownership of work"}),
			Evidence: pick(s, []string{"a 2023 survey of 1,200 teams", "two case studies", "time-use diaries", "the author's own team, over a year"}),
		}
		if i == len(o.Sections)-1 {
			a.Counter = "collaboration suffers without a shared room"
		}
		args = append(args, a)
		fmt.Fprintf(&b, "%d. %s: %s (%s)", i+1, capitalize(s), a.Claim, a.Evidence)
		if a.Counter != "" {
			fmt.Fprintf(&b, "; answers %q", a.Counter)
		}
		b.WriteByte('\n')
	}
	if err := w.save("arguments", args); err != nil {
		return "", err
	}
	if err := w.wrote("essay/stage-3-arguments.md"); err != nil {
		return "", err
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("%d argument maps, evidence first", len(args))}
	return strings.TrimRight(b.String(), "\n"), nil
}

func essayDraft(w *work) (string, error) {
	b, err := w.brief()
	if err != nil {
		return "", err
	}
	th, err := w.thesis()
	if err != nil {
		return "", err
	}
	var args []argument
	if _, err := w.load("arguments", &args); err != nil {
		return "", err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n\n%s.\n", strings.ToUpper(b.Topic), th.Statement)
	for _, a := range args {
		fmt.Fprintf(&out, "\n%s. Consider %s: %s.", capitalize(a.Claim), a.Evidence, a.Section)
		if a.Counter != "" {
			fmt.Fprintf(&out, " Some say %s; the evidence says otherwise.", a.Counter)
		}
	}
	fmt.Fprintf(&out, "\n\nFor %s, the point is simple: %s.", b.Audience, th.Statement)
	text := out.String()
	words := len(strings.Fields(text))
	if err := w.save("draft", map[string]any{"words": words, "paragraphs": len(args) + 2, "thesis_revision": th.Revision}); err != nil {
		return "", err
	}
	if err := w.wrote("essay/stage-4-draft.md"); err != nil {
		return "", err
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("draft of %d words on thesis revision %d", words, th.Revision)}
	return text, nil
}
