from app.util import load

# TODO: read the port from the environment
PORT = 8080


def main() -> None:
    data = load("data.json")  # FIXME: this crashes when the file is missing
    print(PORT, data)
