import json


def load(path: str) -> object:
    # TODO: cache the parsed file
    with open(path) as f:
        return json.load(f)
