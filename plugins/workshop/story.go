package workshop

import (
	"fmt"
	"strings"
)

// The story skills follow the seed "Session Management Architecture
// Specification": story elements, an outline, chapters written scene by
// scene with a checkpoint after each, and an ending that follows the
// run's `direction`, so that a fork with another direction ends
// differently.

// elements is the `story_elements` state section.
type elements struct {
	Title       string `json:"title"`
	Protagonist string `json:"protagonist"`
	Setting     string `json:"setting"`
	Conflict    string `json:"conflict"`
}

// outline is the story's `outline` state section.
type outline struct {
	Chapters []outlineChapter `json:"chapters"`
}

type outlineChapter struct {
	Number int      `json:"number"`
	Title  string   `json:"title"`
	Scenes []string `json:"scenes"`
}

// chapter is a `chapter_N` state section: the scenes written so far.
type chapter struct {
	Number int      `json:"number"`
	Title  string   `json:"title"`
	Scenes []string `json:"scenes"`
}

const defaultPremise = "a lighthouse keeper finds a message in the lamp"

func (w *work) premise() (string, error) {
	p := defaultPremise
	if _, err := w.load("premise", &p); err != nil {
		return "", err
	}
	return p, nil
}

func (w *work) direction() (string, error) {
	d := "the keeper keeps the light burning"
	if _, err := w.load("direction", &d); err != nil {
		return "", err
	}
	return d, nil
}

func (w *work) storyElements() (elements, error) {
	p, err := w.premise()
	if err != nil {
		return elements{}, err
	}
	el := elements{
		Title:       pick(p, []string{"The Last Signal", "Salt and Lamplight", "What the Lamp Knew", "Low Tide"}),
		Protagonist: pick(p+"who", []string{"Maren", "Ilse", "Tobias", "Oren"}),
		Setting:     pick(p+"where", []string{"a rock two miles off a northern coast", "an island the ferry stopped visiting", "a headland above a drowned village"}),
		Conflict:    "whether to believe " + p,
	}
	if _, err := w.load("story_elements", &el); err != nil {
		return el, err
	}
	return el, nil
}

func storyElements(w *work) (string, error) {
	p, err := w.premise()
	if err != nil {
		return "", err
	}
	el, err := w.storyElements()
	if err != nil {
		return "", err
	}
	if err := w.save("story_elements", el); err != nil {
		return "", err
	}
	if err := w.wrote("story/elements.md"); err != nil {
		return "", err
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("%q: %s, on %s", el.Title, el.Protagonist, el.Setting)}
	w.art.NewPatterns = []string{"every scene ends with the lamp's state"}
	return fmt.Sprintf("Story elements for %q\ntitle: %s\nprotagonist: %s\nsetting: %s\nconflict: %s", p, el.Title, el.Protagonist, el.Setting, el.Conflict), nil
}

var sceneBeats = []string{
	"the storm arrives early", "a boat is seen where no boat should be", "the radio gives only static",
	"an old logbook falls open", "the message changes overnight", "someone knocks at the lower door",
	"the lamp's clockwork stops", "the tide uncovers the causeway", "a gull brings a thread of red wool",
}

func storyOutline(w *work) (string, error) {
	el, err := w.storyElements()
	if err != nil {
		return "", err
	}
	n, err := w.intArg("chapters", 3)
	if err != nil {
		return "", err
	}
	per, err := w.intArg("scenes", 3)
	if err != nil {
		return "", err
	}
	var o outline
	var b strings.Builder
	fmt.Fprintf(&b, "Outline of %q: %d chapters of %d scenes\n", el.Title, n, per)
	for c := 1; c <= n; c++ {
		ch := outlineChapter{Number: c, Title: pick(fmt.Sprint(el.Title, c), []string{"The Watch", "The Message", "The Crossing", "The Keeper's Log", "Lamplight"})}
		for s := 1; s <= per; s++ {
			ch.Scenes = append(ch.Scenes, sceneBeats[(c*per+s+len(el.Title))%len(sceneBeats)])
		}
		o.Chapters = append(o.Chapters, ch)
		fmt.Fprintf(&b, "%d. %s: %s\n", c, ch.Title, strings.Join(ch.Scenes, "; "))
	}
	if err := w.save("outline", o); err != nil {
		return "", err
	}
	if err := w.wrote("story/outline.md"); err != nil {
		return "", err
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("%d chapters of %d scenes; the message is revealed in chapter %d", n, per, n)}
	return strings.TrimRight(b.String(), "\n"), nil
}

func storyChapter(w *work) (string, error) {
	n, err := w.intArg("n", 1)
	if err != nil {
		return "", err
	}
	el, err := w.storyElements()
	if err != nil {
		return "", err
	}
	var o outline
	if _, err := w.load("outline", &o); err != nil {
		return "", err
	}
	oc := outlineChapter{Number: n, Title: fmt.Sprintf("Chapter %d", n), Scenes: []string{sceneBeats[0], sceneBeats[1]}}
	if n <= len(o.Chapters) {
		oc = o.Chapters[n-1]
	}
	dir, err := w.direction()
	if err != nil {
		return "", err
	}
	section := fmt.Sprintf("chapter_%d", n)
	ch := chapter{Number: n, Title: oc.Title}
	if _, err := w.load(section, &ch); err != nil {
		return "", err
	}
	resumed := len(ch.Scenes)
	// Scenes already in the state (from an interrupted attempt, or the
	// checkpoint a fork started from) are kept; the rest are written, each
	// saved and checkpointed before the next.
	for s := len(ch.Scenes); s < len(oc.Scenes); s++ {
		if err := w.pause(); err != nil {
			return "", err
		}
		mood := pick(dir+oc.Scenes[s], []string{"Rain needled the glass.", "The sea was flat as slate.", "Wind worried at the gallery rail.", "Fog erased the horizon."})
		text := fmt.Sprintf("%s %s %s, and %s thinks of what it means that %s.", mood, capitalize(oc.Scenes[s]), "at "+el.Setting, el.Protagonist, dir)
		ch.Scenes = append(ch.Scenes, text)
		if err := w.save(section, ch); err != nil {
			return "", err
		}
		if err := w.checkpoint(fmt.Sprintf("chapter %d scene %d", n, s+1)); err != nil {
			return "", err
		}
	}
	if err := w.wrote(fmt.Sprintf("story/chapter-%d.md", n)); err != nil {
		return "", err
	}
	w.metrics["scenes"] = float64(len(ch.Scenes))
	w.metrics["scenes_resumed"] = float64(resumed)
	w.art.KeyDecisions = []string{fmt.Sprintf("chapter %d (%s) follows the direction %q", n, ch.Title, dir)}
	var b strings.Builder
	fmt.Fprintf(&b, "Chapter %d: %s\n", n, ch.Title)
	for i, s := range ch.Scenes {
		fmt.Fprintf(&b, "\n[scene %d] %s", i+1, s)
	}
	if resumed > 0 {
		fmt.Fprintf(&b, "\n\n(%d scene(s) kept from the saved state, %d written now)", resumed, len(ch.Scenes)-resumed)
	}
	return b.String(), nil
}

func storyEnding(w *work) (string, error) {
	el, err := w.storyElements()
	if err != nil {
		return "", err
	}
	dir, err := w.direction()
	if err != nil {
		return "", err
	}
	last := pick(dir, []string{
		"The light turned on its axis, patient as ever.",
		"By morning the tide had taken every trace.",
		"Far out, a second light answered.",
		"The logbook's last page stayed blank.",
	})
	text := fmt.Sprintf("In the end, %s. %s no longer asked %s. %s", dir, el.Protagonist, el.Conflict, last)
	if err := w.save("ending", map[string]string{"direction": dir, "text": text}); err != nil {
		return "", err
	}
	if err := w.wrote("story/ending.md"); err != nil {
		return "", err
	}
	w.art.KeyDecisions = []string{fmt.Sprintf("the ending follows the direction %q", dir)}
	return fmt.Sprintf("Ending of %q\n\n%s", el.Title, text), nil
}
