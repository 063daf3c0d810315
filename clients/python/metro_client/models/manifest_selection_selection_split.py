from typing import Literal

ManifestSelectionSelectionSplit = Literal["cross-validation", "train", "validation"]

MANIFEST_SELECTION_SELECTION_SPLIT_VALUES: set[ManifestSelectionSelectionSplit] = {
    "cross-validation",
    "train",
    "validation",
}


def check_manifest_selection_selection_split(value: str) -> ManifestSelectionSelectionSplit:
    if value in MANIFEST_SELECTION_SELECTION_SPLIT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MANIFEST_SELECTION_SELECTION_SPLIT_VALUES!r}")
