from data.folding import fold, terms


def test_fold_removes_latin_accents_and_case() -> None:
    assert fold("Crème BRÛLÉE") == "creme brulee"
    assert fold("São Paulo") == "sao paulo"


def test_fold_removes_greek_accents() -> None:
    assert fold("Σουβλάκι") == "σουβλακι"


def test_fold_maps_letters_without_decomposition() -> None:
    assert fold("Kısır") == "kisir"
    assert fold("Smørrebrød") == "smorrebrod"


def test_fold_keeps_vowel_signs_of_indic_and_japanese_scripts() -> None:
    assert fold("ਸਰ੍ਹੋਂ") == "ਸਰ੍ਹੋਂ"
    assert fold("がんも") == "がんも"


def test_terms_are_folded_distinct_and_ordered() -> None:
    assert terms("  Crème  brulee CREME ") == ("creme", "brulee")


def test_fold_treats_upper_and_lower_ligatures_alike() -> None:
    assert fold("Æbleskiver") == fold("æbleskiver") == "aebleskiver"
    assert fold("ŒUF") == "oeuf"
