// FIXME: the button is not wired up yet
document.querySelector("#go").addEventListener("click", () => {
  // TODO: call the API
});
