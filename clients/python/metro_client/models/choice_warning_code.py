from typing import Literal

ChoiceWarningCode = Literal[
    "constraint_uncertain",
    "constraints_not_met",
    "few_true_positives",
    "id_like_feature",
    "lambda_at_grid_edge",
    "no_signal",
    "no_supported_choice",
    "offsets_not_tuned",
    "predicts_one_class",
]

CHOICE_WARNING_CODE_VALUES: set[ChoiceWarningCode] = {
    "constraint_uncertain",
    "constraints_not_met",
    "few_true_positives",
    "id_like_feature",
    "lambda_at_grid_edge",
    "no_signal",
    "no_supported_choice",
    "offsets_not_tuned",
    "predicts_one_class",
}


def check_choice_warning_code(value: str) -> ChoiceWarningCode:
    if value in CHOICE_WARNING_CODE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(CHOICE_WARNING_CODE_VALUES)!r}")
