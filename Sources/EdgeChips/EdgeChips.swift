// placeholder: EdgeChips
