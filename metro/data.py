"""The data API under its first name, kept for code that imports ``metro.data``.

Everything it exports lives in :mod:`metro.datasets` (loading, labels, the Dataset type) and
:mod:`metro.model_selection` (splits); new code should import from there.
"""

from metro.datasets import (
    BUILTIN_DATASETS,
    FORMATS,
    DataError,
    DataLimitError,
    Dataset,
    TableShape,
    builtin_shape,
    inspect_file,
    load_dataset,
    parse_labels,
    subset,
)
from metro.model_selection import Splits, split_indices, split_sizes

__all__ = [
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
]
