"""The cockpit's screens: the main screen, the candidate detail screen, and the dialogs."""
