# Story generation (seed: "Session Management Architecture
# Specification"): story elements, an outline, three chapters written
# scene by scene, and an ending. The bundled workshop agent stands in for
# the model: deterministic, offline.
#
#   go run ./cmd/hearth run examples/story
#
# What to watch:
#   - a checkpoint after every node (task), and one after every scene the
#     chapter tasks write: hearth runs show RUN --checkpoints
#   - Ctrl-C pauses the run; hearth runs resume RUN goes on from the
#     newest checkpoint without writing finished chapters again
#   - hearth runs fork RUN --at N --set direction="..." starts a branch from
#     checkpoint N; the ending follows the new direction, and the original
#     run is not touched

agent "storyteller" {
  bundled = "workshop"
}

pipeline "story" {
  description = "a short story in three chapters, checkpointed per scene"
  agent       = "storyteller"

  state {
    initial = {
      premise   = "a lighthouse keeper finds a message in the lamp"
      direction = "the keeper keeps the light burning"
    }
  }

  task "story_elements" {
    prompt = "story.elements delay=300ms"
  }

  task "outline" {
    prompt     = "story.outline chapters=3 scenes=3 delay=300ms"
    depends_on = ["story_elements"]
  }

  # Each chapter saves its section of the state (chapter_N) and asks for a
  # checkpoint after every scene; started again (a resume, or a fork from
  # a scene's checkpoint), it keeps the scenes already saved.
  task "chapter_1" {
    prompt     = "story.chapter n=1 delay=300ms"
    depends_on = ["outline"]
  }

  task "chapter_2" {
    prompt     = "story.chapter n=2 delay=300ms"
    depends_on = ["chapter_1"]
  }

  task "chapter_3" {
    prompt     = "story.chapter n=3 delay=300ms"
    depends_on = ["chapter_2"]
  }

  task "ending" {
    prompt     = "story.ending delay=300ms"
    depends_on = ["chapter_3"]
  }
}
