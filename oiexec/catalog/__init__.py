"""The model catalog: context windows and prices from the offline models.dev and genai-prices
data, remembered on disk, and the list `interpreter models list` shows."""
