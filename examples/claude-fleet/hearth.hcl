# A pool of managed Claude Code sessions answering questions and making
# small edits about a repository (repo/): hearth starts each session,
# resumes it for the next task it fits, and wires its hooks.
#
#   hearth run .          (from a copy of this folder; see README.md)
#
# It runs against the project's scripted model on 127.0.0.1:8089
# (go run ./internal/fakeapi/cmd/hearth-fakeapi); to run it against
# Anthropic's API, delete base_url and export ANTHROPIC_API_KEY instead
# of FLEET_API_KEY (api_key_env = "ANTHROPIC_API_KEY").

agent "coder" {
  bundled   = "claude"
  workspace = "repo"
  claude_code {
    model           = "claude-sonnet-4-5"
    permission_mode = "acceptEdits" # edits need no person to approve them
    max_turns       = 20
    base_url        = "http://127.0.0.1:8089"
    api_key_env     = "FLEET_API_KEY"
  }
  pool {
    max_sessions = 3
  }
}

guard "no-secrets" {
  hook      = "pre_tool_use"
  agents    = ["coder"]
  condition = "touches('**/.env*')"
  message   = ".env holds the payment key; the shop's settings are in its code"
}

# Questions about three packages, interleaved, and two small edits. Each
# task's hints name its package; hearth places it on the session that
# already read that package, or starts one.
pipeline "fleet" {
  agent    = "coder"
  parallel = 1

  task "cart-total" {
    prompt      = "What does cart/cart.go add up, and how does cart/discount.go change it?"
    directories = ["cart"]
  }
  task "pricing-tax" {
    prompt      = "How does pricing/tax.go round, and where does pricing/price.go use it?"
    directories = ["pricing"]
  }
  task "inventory-hold" {
    prompt      = "What does inventory/stock.go count, and what does inventory/reserve.go hold back?"
    directories = ["inventory"]
  }
  task "cart-order" {
    prompt      = "Is the discount in cart/discount.go taken before or after tax? Check cart/cart.go too."
    directories = ["cart"]
  }
  task "pricing-note" {
    prompt      = "Note that pricing/price.go keeps cents, in a file: write:pricing/NOTES.md:Prices-are-whole-cents;-see-price.go"
    directories = ["pricing"]
  }
  task "inventory-race" {
    prompt      = "Can two carts both reserve the last unit? See inventory/reserve.go and inventory/stock.go."
    directories = ["inventory"]
  }
  task "cart-secret" {
    prompt      = "Which payment key does checkout use? read:.env"
    directories = ["cart"]
  }
  task "cart-note" {
    prompt      = "Write down where the discount applies, after reading cart/discount.go, write:cart/NOTES.md:Discount-applies-to-the-subtotal"
    directories = ["cart"]
  }
}
