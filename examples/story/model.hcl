# The story on a real model: elements, outline, three chapters and an
# ending, each a task for the model agent on one conversation (the
# matcher keeps the story's session warm). Needs ANTHROPIC_API_KEY;
# hearth.hcl, the default, runs offline.
#
#   go run ./cmd/hearth run examples/story/model.hcl

agent "storyteller" {
  bundled = "model"
  model {
    model = "claude-sonnet-4-5"
    prices {
      input        = 3
      cached_input = 0.3
      cache_write  = 3.75
      output       = 15
    }
  }
}

pipeline "story" {
  description = "a short story in chapters, written by a model"
  agent       = "storyteller"
  budget      = 1.00 # dollars

  task "story_elements" {
    prompt = "Invent the elements of a short story: a setting, two characters, a conflict. A few lines."
  }
  task "outline" {
    prompt     = "Outline three chapters of three scenes each, and an ending."
    depends_on = ["story_elements"]
  }
  task "chapter_1" {
    prompt     = "Write chapter 1 (about 500 words)."
    depends_on = ["outline"]
  }
  task "chapter_2" {
    prompt     = "Write chapter 2 (about 500 words)."
    depends_on = ["chapter_1"]
  }
  task "chapter_3" {
    prompt     = "Write chapter 3 (about 500 words)."
    depends_on = ["chapter_2"]
  }
  task "ending" {
    prompt     = "Write the ending (about 300 words)."
    depends_on = ["chapter_3"]
  }
}
