"""metro.data, where the data API lived as one module, still exports every name it did, as the
very objects of its new homes (metro.datasets and metro.model_selection): library users import it.

The behaviour itself is tested where it lives: tests/metro/datasets/ and test_model_selection.py.
"""

from __future__ import annotations

import metro.data
import metro.datasets
import metro.model_selection

# What metro.data exported as one module; a name dropped from here breaks the code that uses it.
EXPORTED = (
    "BUILTIN_DATASETS",
    "FORMATS",
    "DataError",
    "DataLimitError",
    "Dataset",
    "Splits",
    "TableShape",
    "builtin_shape",
    "inspect_file",
    "load_dataset",
    "parse_labels",
    "split_indices",
    "split_sizes",
    "subset",
)


def test_metro_data_exports_the_same_names_as_the_objects_of_their_new_homes():
    assert sorted(metro.data.__all__) == sorted(EXPORTED)
    for name in EXPORTED:
        in_selection = name in metro.model_selection.__all__
        home = metro.model_selection if in_selection else metro.datasets
        assert getattr(metro.data, name) is getattr(home, name), name


def test_each_exported_name_has_one_home():
    datasets, selection = set(metro.datasets.__all__), set(metro.model_selection.__all__)
    assert set(EXPORTED) <= datasets | selection  # the new homes may export more
    # names added after metro.data was frozen: only in their home
    assert (datasets | selection) - set(EXPORTED) == {
        "local_path_of", "uri_scheme", "MAX_CLASSES", "MultiTargetDataset", "load_multi_target",
        "parse_classes", "parse_label_matrix", "strata", "stratify_key", "show_values",
        "builtin_size",
        "check_label_columns", "check_ignore_columns", "default_positive", "id_like_features",
        "refuse_ignore_columns", "label_array",
        "ClassCountError",
        "LabelColumnError", "FLOAT32_ROUNDING_LIMIT", "check_float32_precision",
        "float32_features", "stratified_folds",
    }  # fmt: skip
    assert datasets & selection == set()
