"""Loading a user's data set into the one shape the rest of METRO trains on.

Every source (a CSV or Parquet table, an NPZ of arrays, a built-in scikit-learn data set) ends as a
:class:`Dataset`: float32 features, tabular ``(n, d)`` or channels-first images ``(n, C, H, W)``,
and int64 labels in {0, 1} where 1 is the class whose metric (F1, Jaccard, ...) is optimised. The
original label values are kept next to them so that results can be reported in the user's terms.

Data arrive from people, often through an HTTP form, so every problem with them raises
:class:`DataError` with a message meant to be shown as is: it names the column, row, value or
limit at fault and never shows a path other than the one the user gave. Mistakes by the calling
code (a bad ``max_rows``, fractions that do not add up) raise plain ``ValueError``/``TypeError``
instead, because a user cannot fix them.

This package is part of the pure algorithm library: it reads local files only and knows nothing
of the web service, the database or the task queue. One module per concept, as in scikit-learn's
``sklearn.datasets``:

- ``_base``: :class:`Dataset`, :class:`TableShape`, the errors and how messages quote values;
- ``_labels``: :func:`parse_labels`, which class is positive;
- ``_limits``: rows, columns and decompressed bytes one read may take;
- ``_paths``: a path or ``file://`` uri to the file it names, within ``data_roots``;
- ``_csv``, ``_parquet``, ``_npz`` (with ``_table``, shared by the first two): one reader a format;
- ``_builtin``: the ``builtin://`` data sets;
- ``_loader``: :func:`load_dataset` and :func:`inspect_file`, which bring them together;
- ``_multi``: :class:`MultiTargetDataset` and :func:`load_multi_target`, several classes or labels.

Splitting a data set is :mod:`metro.model_selection`.
"""

from metro.datasets._base import (
    ClassCountError,
    DataError,
    DataLimitError,
    Dataset,
    LabelColumnError,
    TableShape,
    show_values,
    subset,
)
from metro.datasets._builtin import BUILTIN_DATASETS, builtin_shape, builtin_size
from metro.datasets._labels import default_positive, label_array, parse_labels
from metro.datasets._loader import (
    FLOAT32_ROUNDING_LIMIT,
    FORMATS,
    check_float32_precision,
    float32_features,
    id_like_features,
    inspect_file,
    load_dataset,
    refuse_ignore_columns,
)
from metro.datasets._multi import (
    MAX_CLASSES,
    MultiTargetDataset,
    check_label_columns,
    load_multi_target,
    parse_classes,
    parse_label_matrix,
    strata,
    stratify_key,
)
from metro.datasets._paths import local_path_of, uri_scheme
from metro.datasets._table import check_ignore_columns

__all__ = [
    "BUILTIN_DATASETS",
    "FLOAT32_ROUNDING_LIMIT",
    "FORMATS",
    "MAX_CLASSES",
    "ClassCountError",
    "DataError",
    "DataLimitError",
    "Dataset",
    "LabelColumnError",
    "MultiTargetDataset",
    "TableShape",
    "builtin_shape",
    "builtin_size",
    "check_float32_precision",
    "check_ignore_columns",
    "check_label_columns",
    "default_positive",
    "float32_features",
    "id_like_features",
    "inspect_file",
    "label_array",
    "load_dataset",
    "load_multi_target",
    "local_path_of",
    "parse_classes",
    "parse_label_matrix",
    "parse_labels",
    "refuse_ignore_columns",
    "show_values",
    "strata",
    "stratify_key",
    "subset",
    "uri_scheme",
]
